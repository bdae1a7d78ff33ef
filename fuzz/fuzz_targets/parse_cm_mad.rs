//! Any bytes -> `cm::parse_mad`; a message that parsed emits into a whole
//! 256-byte MAD that parses back to the same message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rocescope_dissectors::Layer;
use rocescope_dissectors::cm::{self, CmAttribute, MAD_LEN, MGMT_CLASS_CM};

fuzz_target!(|data: &[u8]| {
    match cm::parse_mad(data) {
        Ok(Some(m)) => {
            // only CM MADs that hold every field of their attribute parse
            assert_eq!(data[1], MGMT_CLASS_CM);
            assert!(data.len() >= m.attribute.parse_len());
            assert!(m.attribute.parse_len() >= cm::HEADER_LEN);
            let header = cm::Header::new_checked(data).expect("a parsed MAD has a header");
            assert_eq!(CmAttribute(header.attribute_id()), m.attribute);
            assert_eq!(header.transaction_id(), m.transaction_id);
            let _ = (header.to_string(), header.data(), header.reserved());
            let _ = cm::Repr::parse(&header).expect("header parses").to_string();
            let _ = (m.to_string(), m.attribute.to_string(), m.attribute.name());
            if let Some(reason) = m.reject_reason {
                let _ = cm::reject_reason_name(reason);
            }
            if let Some(code) = m.path_mtu_code {
                assert_eq!(m.path_mtu, cm::mtu_from_code(code));
            }

            // emit into a 256-byte buffer (dirty, to catch fields left unwritten)
            let mut buf = [0xA5u8; MAD_LEN];
            assert_eq!(m.buffer_len(), MAD_LEN);
            m.emit(&mut cm::Header::new_unchecked(&mut buf[..]));
            assert_eq!(buf, m.to_bytes());
            assert_eq!(cm::parse_mad(&buf), Ok(Some(m)));
            // and the prefix the attribute needs is enough
            let need = m.attribute.parse_len();
            assert_eq!(cm::parse_mad(&buf[..need]), Ok(Some(m)));
        }
        Ok(None) => {
            // another management class (its byte is there and is not CM)
            assert!(data.len() > 1 && data[1] != MGMT_CLASS_CM);
        }
        Err(e) => {
            // documented: only ever Truncated in the MAD layer
            assert!(e.is_truncated(), "{e:?}");
            assert_eq!(e.layer(), Layer::Mad);
            let _ = e.to_string();
        }
    }
});
