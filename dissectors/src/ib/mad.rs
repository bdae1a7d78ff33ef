//! The management datagram (MAD) common header of every management class (IBA 13.4.2), on
//! QP0 (subnet management) and QP1 (general services) over native InfiniBand and RoCE: the
//! view is [`crate::cm::Header`] (24 bytes); this module names classes, methods and
//! attributes, and walks the fields. The CM class is decoded in full by [`crate::cm`].

use core::ops::Range;

use crate::cm;
use crate::visit::{Value, Visitor};

pub use crate::cm::Header;

/// Management class values (IBA 13.4.4).
pub mod class {
    pub const SUBN_LID_ROUTED: u8 = 0x01;
    pub const SUBN_DIRECTED_ROUTE: u8 = 0x81;
    pub const SUBN_ADM: u8 = 0x03;
    pub const PERF: u8 = 0x04;
    pub const BM: u8 = 0x05;
    pub const DEV_MGT: u8 = 0x06;
    pub const CM: u8 = 0x07;
    pub const SNMP: u8 = 0x08;
    pub const CC: u8 = 0x21;
}

/// The short name of a management class (`SMP`, `SA`, `PerfMgt`, `CM`, …).
#[must_use]
pub const fn class_name(mgmt_class: u8) -> &'static str {
    match mgmt_class {
        class::SUBN_LID_ROUTED => "SMP",
        class::SUBN_DIRECTED_ROUTE => "SMP (directed route)",
        class::SUBN_ADM => "SA",
        class::PERF => "PerfMgt",
        class::BM => "BM",
        class::DEV_MGT => "DevMgt",
        class::CM => "CM",
        class::SNMP => "SNMP",
        0x09..=0x0F => "Vendor",
        0x10 => "Application",
        class::CC => "CC",
        0x30..=0x4F => "Vendor (OUI)",
        _ => "Unknown",
    }
}

/// The method's name, the response bit (0x80) included (`Get`, `GetResp`, `GetTable`, …).
#[must_use]
pub const fn method_name(method: u8) -> &'static str {
    match method {
        0x01 => "Get",
        0x02 => "Set",
        0x03 => "Send",
        0x05 => "Trap",
        0x06 => "Report",
        0x07 => "TrapRepress",
        0x12 => "GetTable",
        0x13 => "GetTraceTable",
        0x14 => "GetMulti",
        0x15 => "Delete",
        0x81 => "GetResp",
        0x86 => "ReportResp",
        0x92 => "GetTableResp",
        0x94 => "GetMultiResp",
        0x95 => "DeleteResp",
        _ => "Unknown",
    }
}

/// The attribute's name in its class (`NodeInfo`, `PathRecord`, `PortCounters`,
/// `ConnectRequest`), `None` when this table does not know it.
#[must_use]
pub const fn attribute_name(mgmt_class: u8, attribute: u16) -> Option<&'static str> {
    if attribute == 0x0001 {
        return Some("ClassPortInfo");
    }
    match mgmt_class {
        class::SUBN_LID_ROUTED | class::SUBN_DIRECTED_ROUTE => Some(match attribute {
            0x0002 => "Notice",
            0x0003 => "InformInfo",
            0x0010 => "NodeDescription",
            0x0011 => "NodeInfo",
            0x0012 => "SwitchInfo",
            0x0014 => "GUIDInfo",
            0x0015 => "PortInfo",
            0x0016 => "P_KeyTable",
            0x0017 => "SLtoVLMappingTable",
            0x0018 => "VLArbitrationTable",
            0x0019 => "LinearForwardingTable",
            0x001A => "RandomForwardingTable",
            0x001B => "MulticastForwardingTable",
            0x0020 => "SMInfo",
            0x0030 => "VendorDiag",
            0x0031 => "LedInfo",
            _ => return None,
        }),
        class::SUBN_ADM => Some(match attribute {
            0x0002 => "Notice",
            0x0003 => "InformInfo",
            0x0011 => "NodeRecord",
            0x0012 => "PortInfoRecord",
            0x0013 => "SLtoVLMappingTableRecord",
            0x0014 => "SwitchInfoRecord",
            0x0015 => "LinearForwardingTableRecord",
            0x0016 => "RandomForwardingTableRecord",
            0x0017 => "MulticastForwardingTableRecord",
            0x0018 => "SMInfoRecord",
            0x0020 => "LinkRecord",
            0x0030 => "GuidInfoRecord",
            0x0031 => "ServiceRecord",
            0x0033 => "P_KeyTableRecord",
            0x0035 => "PathRecord",
            0x0036 => "VLArbitrationTableRecord",
            0x0038 => "MCMemberRecord",
            0x0039 => "TraceRecord",
            0x003A => "MultiPathRecord",
            0x003B => "ServiceAssociationRecord",
            0x00F3 => "InformInfoRecord",
            _ => return None,
        }),
        class::PERF => Some(match attribute {
            0x0010 => "PortSamplesControl",
            0x0011 => "PortSamplesResult",
            0x0012 => "PortCounters",
            0x0013 => "PortRcvErrorDetails",
            0x0014 => "PortXmitDiscardDetails",
            0x0015 => "PortOpRcvCounters",
            0x0016 => "PortFlowCtlCounters",
            0x0017 => "PortVLOpPackets",
            0x0018 => "PortVLOpData",
            0x0019 => "PortVLXmitFlowCtlUpdateErrors",
            0x001A => "PortVLXmitWaitCounters",
            0x001D => "PortCountersExtended",
            0x0030 => "SwPortVLCongestion",
            _ => return None,
        }),
        class::CM => cm::CmAttribute(attribute).name(),
        _ => None,
    }
}

impl<T: AsRef<[u8]>> Header<T> {
    /// The management class's short name.
    #[must_use]
    pub fn class_name(&self) -> &'static str {
        class_name(self.mgmt_class())
    }

    /// The whole method byte (response bit included), as tshark's `infiniband.mad.method`.
    #[must_use]
    pub fn method_byte(&self) -> u8 {
        self.method() | if self.response() { 0x80 } else { 0 }
    }

    /// Every common-header field, for the `mad` layer of the field tree.
    pub fn visit_mad(&self, range: Range<usize>, v: &mut impl Visitor) {
        let o = range.start;
        let f = |a: usize, b: usize| o + a..o + b;
        v.begin(
            "mad",
            "Management Datagram",
            range.start..range.start + cm::HEADER_LEN,
        );
        let u = |x: u64| Value::Uint(x);
        v.field(
            "base_version",
            "Base Version",
            u(u64::from(self.base_version())),
            f(0, 1),
        );
        v.field(
            "mgmt_class",
            "Management Class",
            Value::Hex(u64::from(self.mgmt_class()), 2),
            f(1, 2),
        );
        v.field(
            "class_name",
            "Class",
            Value::Str(self.class_name()),
            f(1, 2),
        );
        v.field(
            "class_version",
            "Class Version",
            u(u64::from(self.class_version())),
            f(2, 3),
        );
        let method = self.method_byte();
        v.field(
            "method",
            "Method",
            Value::Hex(u64::from(method), 2),
            f(3, 4),
        );
        v.field(
            "method_name",
            "Method Name",
            Value::Str(method_name(method)),
            f(3, 4),
        );
        v.field(
            "status",
            "Status",
            Value::Hex(u64::from(self.status()), 4),
            f(4, 6),
        );
        v.field(
            "tid",
            "Transaction ID",
            Value::Hex(self.transaction_id(), 16),
            f(8, 16),
        );
        let attr = self.attribute_id();
        v.field(
            "attribute_id",
            "Attribute ID",
            Value::Hex(u64::from(attr), 4),
            f(16, 18),
        );
        let name = attribute_name(self.mgmt_class(), attr).unwrap_or("Unknown");
        v.field("attribute_name", "Attribute", Value::Str(name), f(16, 18));
        let modifier = Value::Hex(u64::from(self.attribute_modifier()), 8);
        v.field(
            "attribute_modifier",
            "Attribute Modifier",
            modifier,
            f(20, 24),
        );
        v.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(class_name(0x01), "SMP");
        assert_eq!(class_name(0x03), "SA");
        assert_eq!(class_name(0x04), "PerfMgt");
        assert_eq!(class_name(0x07), "CM");
        assert_eq!(method_name(0x81), "GetResp");
        assert_eq!(method_name(0x12), "GetTable");
        assert_eq!(attribute_name(0x01, 0x0011), Some("NodeInfo"));
        assert_eq!(attribute_name(0x03, 0x0035), Some("PathRecord"));
        assert_eq!(attribute_name(0x04, 0x0012), Some("PortCounters"));
        assert_eq!(attribute_name(0x07, 0x0010), Some("ConnectRequest"));
        assert_eq!(attribute_name(0x22, 0x0011), None);
        assert_eq!(attribute_name(0x22, 0x0001), Some("ClassPortInfo"));
    }
}
