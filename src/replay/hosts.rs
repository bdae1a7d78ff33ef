//! The addresses flows are keyed by, each stored once. A flow holds its two ends as 4-byte
//! host ids ([`HostKey`]) instead of two 18-byte addresses: a fabric's capture has hundreds of
//! thousands of flows between a few thousand hosts (issue 13: memory by flows, and small per
//! flow). Ids are given in the order addresses are first met and never reused.

use super::event::{Addr, FlowKey};
use super::hash::FxHashMap;

/// A flow's key with its addresses as [`Hosts`] ids: `(src, dst, BTH.DestQP)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct HostKey {
    pub src: u32,
    pub dst: u32,
    pub dest_qp: u32,
}

/// Every address met, by id.
#[derive(Debug, Clone, Default)]
pub struct Hosts {
    addrs: Vec<Addr>,
    ids: FxHashMap<Addr, u32>,
    /// The ids [`Hosts::intern`] gave last, newest first: a new flow's two ends are most
    /// often the hosts of the flow before it, and comparing an address is cheaper than
    /// hashing it (the lookups were a twentieth of the replay while 400,000 flows appeared).
    /// Starts as ids 0 and 0, which name no address until the first is interned.
    recent: [u32; 2],
}

impl Hosts {
    /// The id of `addr`, given it now if it has none.
    pub fn intern(&mut self, addr: Addr) -> u32 {
        let id = self
            .recent
            .into_iter()
            .find(|&id| self.addrs.get(id as usize) == Some(&addr));
        let id = id.unwrap_or_else(|| self.lookup_or_add(addr));
        if self.recent[0] != id {
            self.recent = [id, self.recent[0]];
        }
        id
    }

    /// The id of `addr` from the table of every address, given it now if it has none.
    fn lookup_or_add(&mut self, addr: Addr) -> u32 {
        if let Some(&id) = self.ids.get(&addr) {
            return id;
        }
        let id = u32::try_from(self.addrs.len()).unwrap_or(u32::MAX);
        self.addrs.push(addr);
        self.ids.insert(addr, id);
        id
    }

    /// `key` with its addresses as ids, given them if new.
    pub fn intern_key(&mut self, key: &FlowKey) -> HostKey {
        HostKey {
            src: self.intern(key.src),
            dst: self.intern(key.dst),
            dest_qp: key.dest_qp,
        }
    }

    /// `key` with its addresses as ids, if both have one.
    #[must_use]
    pub fn lookup(&self, key: &FlowKey) -> Option<HostKey> {
        Some(HostKey {
            src: *self.ids.get(&key.src)?,
            dst: *self.ids.get(&key.dst)?,
            dest_qp: key.dest_qp,
        })
    }

    /// Every address, by id.
    #[must_use]
    pub fn addrs(&self) -> &[Addr] {
        &self.addrs
    }

    /// The address of `id`. Ids come only from [`Hosts::intern`] on this table; an id it
    /// never gave reads as LID 0 rather than panicking.
    #[inline]
    #[must_use]
    pub fn addr(&self, id: u32) -> Addr {
        self.addrs.get(id as usize).copied().unwrap_or(Addr::Lid(0))
    }

    /// Whether `key` is the flow key `host_key` stands for (without looking ids up).
    #[inline]
    #[must_use]
    pub fn matches(&self, host_key: &HostKey, key: &FlowKey) -> bool {
        host_key.dest_qp == key.dest_qp
            && self.addrs.get(host_key.src as usize) == Some(&key.src)
            && self.addrs.get(host_key.dst as usize) == Some(&key.dst)
    }

    /// The flow key `host_key` stands for.
    #[inline]
    #[must_use]
    pub fn key(&self, host_key: &HostKey) -> FlowKey {
        FlowKey {
            src: self.addr(host_key.src),
            dst: self.addr(host_key.dst),
            dest_qp: host_key.dest_qp,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    #[test]
    fn keys_round_trip_through_their_ids() {
        let mut hosts = Hosts::default();
        let a = Addr::Ip(Ipv4Addr::new(10, 0, 0, 1).into());
        let b = Addr::Lid(7);
        let key = FlowKey {
            src: a,
            dst: b,
            dest_qp: 0x12,
        };
        let hk = hosts.intern_key(&key);
        assert_eq!((hk.src, hk.dst), (0, 1));
        assert_eq!(hosts.key(&hk), key);
        assert!(hosts.matches(&hk, &key));
        let back = FlowKey {
            src: b,
            dst: a,
            dest_qp: 0x12,
        };
        assert!(!hosts.matches(&hk, &back));
        // the same address keeps its id
        assert_eq!(
            hosts.intern_key(&back),
            HostKey {
                src: 1,
                dst: 0,
                dest_qp: 0x12
            }
        );
        assert_eq!(hosts.addr(9), Addr::Lid(0));
    }

    /// Ids stay each address's own whichever recent ids the addresses are asked in between
    /// (a cache that answered from its slots without comparing addresses is caught).
    #[test]
    fn ids_survive_the_recent_cache() {
        let mut hosts = Hosts::default();
        let addr = |i: u32| Addr::Ip(Ipv4Addr::from(0x0a00_0000 + i).into());
        let order = [0, 1, 0, 2, 2, 1, 3, 0, 3, 1, 4, 4, 0, 2, 1, 3, 4];
        for &i in &order {
            let id = hosts.intern(addr(i));
            assert_eq!(hosts.addr(id), addr(i), "address {i} read back as {id}");
        }
        // ids in the order addresses were first met
        for i in 0..5 {
            assert_eq!(hosts.intern(addr(i)), i);
        }
        assert_eq!(hosts.addrs().len(), 5);
    }
}
