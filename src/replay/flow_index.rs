//! The flow table's index: flow key -> flow id. A slot holds the id and 32 bits of the key's
//! hash (8 bytes), and keys are compared against the flows themselves (their addresses read
//! from the small [`Hosts`] table): a map of whole keys (40 bytes each) would cost every
//! frame two cache misses once the flows number in the hundreds of thousands. The slot a
//! search starts at is chosen by those 32 bits too, so that growing the table moves slots
//! without reading a flow.
//!
//! Open addressing with linear probing, written here rather than taken from hashbrown because
//! the replay looks a batch of frames up ahead of stepping them ([`FlowIndex::prefetch`]): it
//! needs the address of a key's first slot from its hash alone, to fetch the slots of many
//! frames at once instead of waiting on each in turn.

use std::net::IpAddr;

use super::event::{Addr, FlowKey};
use super::flow::Flow;
use super::hosts::Hosts;

/// A slot: a flow's id and its key's [`tag`], or [`EMPTY`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Slot {
    tag: u32,
    id: u32,
}

/// No flow: ids are flow indices, and a table never holds `u32::MAX` flows.
const EMPTY: Slot = Slot {
    tag: 0,
    id: u32::MAX,
};

/// Slots of a table's first allocation (a power of two).
const FIRST_SLOTS: usize = 64;

#[derive(Debug, Default)]
pub struct FlowIndex {
    /// A power of two long (or empty), at most [`FlowIndex::full`] in use.
    slots: Vec<Slot>,
    len: usize,
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

/// The key's hash: its three parts folded into 128 bits and mixed by one wide multiply. The
/// derived `Hash` fed seven words one at a time and was a tenth of the engine thread's time on
/// small frames.
#[inline]
fn hash(key: &FlowKey) -> u64 {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xD6E8_FEB8_6659_FD93;
    let x = fold(&key.src).rotate_left(32) ^ fold(&key.dst);
    let y = u64::from(key.dest_qp) ^ K2;
    let wide = u128::from(x ^ K1) * u128::from(y.wrapping_mul(K1) ^ x.rotate_left(17));
    (wide as u64) ^ ((wide >> 64) as u64)
}

/// What a key leaves in its slot: the low half of its hash, whose low bits also choose the
/// slot its search starts at ([`FlowIndex::home`]).
#[inline]
fn tag(key: &FlowKey) -> u32 {
    hash(key) as u32
}

/// Whether `flows[id]` is the flow of `key` (ids in the index always name a flow: they are
/// added as flows are).
#[inline]
fn is_flow_of(key: &FlowKey, flows: &[Flow], hosts: &Hosts, id: u32) -> bool {
    flows
        .get(id as usize)
        .is_some_and(|f| hosts.matches(&f.key, key))
}

impl FlowIndex {
    /// The id of `key`'s flow in `flows`, if it has one.
    #[inline]
    #[must_use]
    pub fn get(&self, key: &FlowKey, flows: &[Flow], hosts: &Hosts) -> Option<u32> {
        self.search(key, |id| is_flow_of(key, flows, hosts, id))
    }

    /// The id of the first flow whose slot carries `key`'s tag, without comparing keys (no
    /// read of the flows): a guess, right unless two keys share 32 bits of hash, for reading
    /// ahead only.
    #[inline]
    #[must_use]
    pub fn guess(&self, key: &FlowKey) -> Option<u32> {
        self.search(key, |_| true)
    }

    /// The first id from `key`'s home slot on whose slot carries `key`'s tag and that `is_it`
    /// accepts.
    #[inline]
    fn search(&self, key: &FlowKey, is_it: impl Fn(u32) -> bool) -> Option<u32> {
        let tag = tag(key);
        let mut at = self.home(tag);
        // ends: the table always has an empty slot (see `full`)
        loop {
            let slot = *self.slots.get(at)?;
            if slot == EMPTY {
                return None;
            }
            if slot.tag == tag && is_it(slot.id) {
                return Some(slot.id);
            }
            at = self.next(at);
        }
    }

    /// The slot where the search for a key of `tag` starts (0 in an empty table). Starting
    /// every search at the first slot of a cache line (the table aligned to lines), so that
    /// fewer searches read two lines, measured no faster at 400,000 flows (1.002x, 15 pairs).
    #[inline]
    fn home(&self, tag: u32) -> usize {
        tag as usize & self.slots.len().saturating_sub(1)
    }

    /// The slot searched after `at`.
    #[inline]
    fn next(&self, at: usize) -> usize {
        (at + 1) & self.slots.len().saturating_sub(1)
    }

    /// Asks for the slot `key`'s search starts at to be brought into cache, ahead of [`get`].
    ///
    /// [`get`]: FlowIndex::get
    #[inline]
    pub fn prefetch(&self, key: &FlowKey) {
        prefetch_index::prefetch_index(&self.slots, self.home(tag(key)));
    }

    /// Record `id` as the flow of `key`, which must not be in the index yet.
    pub fn insert(&mut self, id: u32, key: &FlowKey) {
        if self.full() {
            self.grow();
        }
        self.place(tag(key), id);
        self.len += 1;
    }

    /// Whether one more flow would leave the table over 7/8 full (or with no empty slot).
    fn full(&self) -> bool {
        (self.len + 1) * 8 > self.slots.len() * 7
    }

    /// Twice the slots, every flow placed again by its tag.
    fn grow(&mut self) {
        let slots = (self.slots.len() * 2).max(FIRST_SLOTS);
        let old = std::mem::replace(&mut self.slots, vec![EMPTY; slots]);
        for s in old.into_iter().filter(|&s| s != EMPTY) {
            self.place(s.tag, s.id);
        }
    }

    /// `id` into the first empty slot from its tag's home.
    fn place(&mut self, tag: u32, id: u32) {
        let mut at = self.home(tag);
        while let Some(slot) = self.slots.get_mut(at) {
            if *slot == EMPTY {
                *slot = Slot { tag, id };
                return;
            }
            at = self.next(at);
        }
    }

    /// Flows indexed (the tests').
    #[cfg(test)]
    fn len(&self) -> usize {
        self.len
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

    /// Keys as a fabric makes them (few hosts, QP numbers counting up) spread over home slots
    /// (the low bits) and over the bits of their tags above those (bits 25 to 31) as random
    /// hashes would.
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
                tags[(h >> 25) as usize & 127] += 1;
            }
            // 65,536 random hashes leave about 36.8 % of 65,536 buckets empty, and none
            // holds more than a handful; each tag is drawn about 512 times.
            let empty = buckets.iter().filter(|&&n| n == 0).count();
            assert!((22_000..26_500).contains(&empty), "{empty} empty buckets");
            assert!(buckets.iter().all(|&n| n < 12));
            assert!(tags.iter().all(|&n| (380..650).contains(&n)), "{tags:?}");
        }
    }

    /// An IPv6 address with an IPv4 one in its low bits folds as that IPv4 address does: the
    /// two keys share a hash (slot and tag), and only their comparison tells them apart.
    #[test]
    fn keys_of_one_hash_stay_apart() {
        let v4 = Addr::Ip(std::net::Ipv4Addr::new(10, 0, 0, 1).into());
        let v6 = Addr::Ip(std::net::Ipv6Addr::from(0x0a00_0001u128).into());
        let lid = Addr::Lid(7);
        let a = FlowKey {
            src: v4,
            dst: lid,
            dest_qp: 9,
        };
        let b = FlowKey { src: v6, ..a };
        assert_eq!(hash(&a), hash(&b));
        let mut index = FlowIndex::default();
        let mut hosts = Hosts::default();
        assert_eq!(index.get(&a, &[], &hosts), None, "an empty index");
        let flows = vec![
            Flow::new(hosts.intern_key(&a)),
            Flow::new(hosts.intern_key(&b)),
        ];
        index.insert(0, &a);
        assert_eq!(index.get(&b, &flows, &hosts), None);
        index.insert(1, &b);
        assert_eq!(index.get(&a, &flows, &hosts), Some(0));
        assert_eq!(index.get(&b, &flows, &hosts), Some(1));
        // a guess goes by the tag alone: both get the first flow's id
        assert_eq!((index.guess(&a), index.guess(&b)), (Some(0), Some(0)));
        // where a search starts: the same slot for both
        assert_eq!(index.home(tag(&a)), index.home(tag(&b)));
    }

    #[test]
    fn finds_every_flow_it_was_given_and_no_other() {
        let mut flows = Vec::new();
        let mut hosts = Hosts::default();
        let mut index = FlowIndex::default();
        // enough to grow the table several times
        for id in 0..5000u32 {
            flows.push(Flow::new(hosts.intern_key(&key(id * 3))));
            index.insert(id, &key(id * 3));
        }
        assert_eq!(index.len(), 5000);
        for id in 0..5000u32 {
            assert_eq!(index.get(&key(id * 3), &flows, &hosts), Some(id));
            assert_eq!(index.get(&key(id * 3 + 1), &flows, &hosts), None);
            // these keys' tags all differ: a guess is right
            assert_eq!(index.guess(&key(id * 3)), Some(id));
        }
    }
}
