//! The flow table's index: flow key -> flow id, holding only the ids (4 bytes a slot) and
//! comparing keys against the flows themselves. A map of whole keys (40 bytes each) costs every
//! frame two cache misses once the flows number in the hundreds of thousands; this one's slots
//! stay in cache, and the flow the key is compared with is the one the frame updates next.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::event::FlowKey;
use super::flow::Flow;
use super::hash::FxBuild;

#[derive(Debug, Default)]
pub struct FlowIndex {
    table: HashTable<u32>,
}

#[inline]
fn hash(key: &FlowKey) -> u64 {
    FxBuild::default().hash_one(key)
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
