//! The flow table's index: flow key -> flow id, holding only the ids (4 bytes a slot) and
//! comparing keys against the flows themselves. A map of whole keys (40 bytes each) costs every
//! frame two cache misses once the flows number in the hundreds of thousands; this one's slots
//! stay in cache, and the flow the key is compared with is the one the frame updates next.

use std::net::IpAddr;

use hashbrown::HashTable;

use super::event::{Addr, FlowKey};
use super::flow::Flow;

#[derive(Debug, Default)]
pub struct FlowIndex {
    table: HashTable<u32>,
}

/// An address folded to 64 bits. Different addresses may fold alike (an IPv6 address and an
/// IPv4 one, say): the index compares whole keys, so that costs only a comparison.
#[inline]
fn fold(a: &Addr) -> u64 {
    match a {
        Addr::Ip(IpAddr::V4(v4)) => u64::from(v4.to_bits()),
        Addr::Ip(IpAddr::V6(v6)) => {
            let bits = v6.to_bits();
            // the upper half is the prefix, the lower the interface (a GID's GUID)
            (bits as u64) ^ ((bits >> 64) as u64).rotate_left(29)
        }
        Addr::Lid(lid) => u64::from(*lid) | 1 << 63,
    }
}

/// The key's hash: its three parts folded into 128 bits and mixed by one wide multiply
/// (hashbrown needs good high bits for its tags and good low bits for its buckets). The
/// derived `Hash` fed seven words one at a time and was a tenth of the engine thread's time
/// on small frames.
#[inline]
fn hash(key: &FlowKey) -> u64 {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xD6E8_FEB8_6659_FD93;
    let x = fold(&key.src).rotate_left(32) ^ fold(&key.dst);
    let y = u64::from(key.dest_qp) ^ K2;
    let wide = u128::from(x ^ K1) * u128::from(y.wrapping_mul(K1) ^ x.rotate_left(17));
    (wide as u64) ^ ((wide >> 64) as u64)
}

/// The flow of `id`; ids in the index always name a flow (they are added as flows are).
#[inline]
fn key_of(flows: &[Flow], id: u32) -> Option<&FlowKey> {
    flows.get(id as usize).map(|f| &f.key)
}

impl FlowIndex {
    /// The id of `key`'s flow in `flows`, if it has one.
    #[inline]
    #[must_use]
    pub fn get(&self, key: &FlowKey, flows: &[Flow]) -> Option<u32> {
        self.table
            .find(hash(key), |&id| key_of(flows, id) == Some(key))
            .copied()
    }

    /// Record `id` as the flow of its key (`flows[id]`), which must not be in the index yet.
    pub fn insert(&mut self, id: u32, flows: &[Flow]) {
        let Some(key) = key_of(flows, id) else {
            return;
        };
        self.table
            .insert_unique(hash(key), id, |&other| key_of(flows, other).map_or(0, hash));
    }

    /// Flows indexed (the tests').
    #[cfg(test)]
    fn len(&self) -> usize {
        self.table.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::event::Addr;

    fn key(i: u32) -> FlowKey {
        FlowKey {
            src: Addr::Ip(std::net::Ipv4Addr::from(0x0a00_0001 + (i % 7)).into()),
            dst: Addr::Lid(0x12),
            dest_qp: i,
        }
    }

    /// Keys as a fabric makes them (few hosts, QP numbers counting up) spread over buckets
    /// (the low bits) and tags (the top seven) as random hashes would.
    #[test]
    fn hashes_of_fabric_keys_spread() {
        let v6 = |i: u32| {
            Addr::Ip(
                std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 0x0202, 0xc9ff, 0xfe00, i as u16).into(),
            )
        };
        let v4 = |i: u32| Addr::Ip(std::net::Ipv4Addr::from(0x0a00_0001 + i).into());
        for make in [v4, v6, |i: u32| Addr::Lid(i as u16)] {
            let keys = (0..65_536u32).map(|i| FlowKey {
                src: make(i % 4),
                dst: make(1 + i % 4),
                dest_qp: 0x1000 + i / 4,
            });
            let mut buckets = vec![0u32; 65_536];
            let mut tags = [0u32; 128];
            for k in keys {
                let h = hash(&k);
                buckets[(h & 0xFFFF) as usize] += 1;
                tags[(h >> 57) as usize] += 1;
            }
            // 65,536 random hashes leave about 36.8 % of 65,536 buckets empty, and none
            // holds more than a handful; each tag is drawn about 512 times.
            let empty = buckets.iter().filter(|&&n| n == 0).count();
            assert!((22_000..26_500).contains(&empty), "{empty} empty buckets");
            assert!(buckets.iter().all(|&n| n < 12));
            assert!(tags.iter().all(|&n| (380..650).contains(&n)), "{tags:?}");
        }
    }

    #[test]
    fn finds_every_flow_it_was_given_and_no_other() {
        let mut flows = Vec::new();
        let mut index = FlowIndex::default();
        // enough to grow the table several times (rehashing reads the keys back from `flows`)
        for id in 0..5000u32 {
            flows.push(Flow::new(id, key(id * 3)));
            index.insert(id, &flows);
        }
        assert_eq!(index.len(), 5000);
        for id in 0..5000u32 {
            assert_eq!(index.get(&key(id * 3), &flows), Some(id));
            assert_eq!(index.get(&key(id * 3 + 1), &flows), None);
        }
    }
}
