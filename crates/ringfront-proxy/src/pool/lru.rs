//! The keepalive cache's bookkeeping, without sockets or clocks: entries on two intrusive
//! doubly linked lists at once, their peer's (most recently used first, where `take` looks,
//! as nginx takes the head of its cache queue) and their group's (least recently used last,
//! where a full cache evicts and where idle deadlines come due first). Every operation is
//! O(1); freed nodes are reused, so a warm cache allocates nothing.

/// The end of a list.
const NIL: u32 = u32::MAX;

/// An entry's handle, valid until the entry leaves the cache.
pub type Key = u32;

#[derive(Clone, Copy)]
struct Ends {
    head: u32,
    tail: u32,
    len: u32,
}

impl Default for Ends {
    fn default() -> Self {
        Ends {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

#[derive(Clone, Copy)]
struct Links {
    prev: u32,
    next: u32,
}

const UNLINKED: Links = Links {
    prev: NIL,
    next: NIL,
};

struct Node<T> {
    value: Option<T>,
    /// When the entry went idle, in the caller's milliseconds.
    since: u64,
    group: u32,
    peer: u32,
    in_group: Links,
    in_peer: Links,
}

/// Which of a node's two lists an operation walks.
#[derive(Clone, Copy)]
enum Side {
    Group,
    Peer,
}

pub struct Lru<T> {
    nodes: Vec<Node<T>>,
    /// Free nodes, chained through `in_peer.next`.
    free: u32,
    groups: Vec<Ends>,
    peers: Vec<Ends>,
}

impl<T> Lru<T> {
    pub fn new(peer_count: usize) -> Self {
        Lru {
            nodes: Vec::new(),
            free: NIL,
            groups: Vec::new(),
            peers: vec![Ends::default(); peer_count],
        }
    }

    pub fn peer_count(&self) -> usize {
        self.peers.len()
    }

    pub fn group_count(&self) -> usize {
        self.groups.len()
    }

    /// Idle entries of `group`.
    pub fn group_len(&self, group: usize) -> usize {
        self.groups.get(group).map_or(0, |e| e.len as usize)
    }

    /// Idle entries of `peer`.
    pub fn peer_len(&self, peer: usize) -> usize {
        self.peers.get(peer).map_or(0, |e| e.len as usize)
    }

    /// When the least recently used entry of `group` went idle.
    pub fn oldest(&self, group: usize) -> Option<u64> {
        let tail = self.groups.get(group)?.tail;
        self.nodes.get(tail as usize).map(|n| n.since)
    }

    /// Adds `value` as the most recently used entry of `peer` and `group`. `peer` must be
    /// below `peer_count`.
    pub fn push(&mut self, group: usize, peer: usize, since: u64, value: T) -> Key {
        if self.groups.len() <= group {
            self.groups.resize(group + 1, Ends::default());
        }
        let node = Node {
            value: Some(value),
            since,
            group: group as u32,
            peer: peer as u32,
            in_group: UNLINKED,
            in_peer: UNLINKED,
        };
        let key = if self.free == NIL {
            self.nodes.push(node);
            (self.nodes.len() - 1) as Key
        } else {
            let key = self.free;
            self.free = self.nodes[key as usize].in_peer.next;
            self.nodes[key as usize] = node;
            key
        };
        self.link_front(Side::Group, key);
        self.link_front(Side::Peer, key);
        key
    }

    /// The most recently used entry of `peer`, taken out.
    pub fn pop_mru(&mut self, peer: usize) -> Option<T> {
        let head = self.peers.get(peer)?.head;
        self.remove(head)
    }

    /// The least recently used entry of `group`, taken out.
    pub fn pop_lru(&mut self, group: usize) -> Option<T> {
        let tail = self.groups.get(group)?.tail;
        self.remove(tail)
    }

    /// The least recently used entry of `group` if it went idle at or before `cutoff`.
    pub fn pop_idle_since(&mut self, group: usize, cutoff: u64) -> Option<T> {
        if self.oldest(group)? > cutoff {
            return None;
        }
        self.pop_lru(group)
    }

    /// Takes the entry `key` out; `None` when it is not in the cache.
    pub fn remove(&mut self, key: Key) -> Option<T> {
        let value = self.nodes.get_mut(key as usize)?.value.take()?;
        self.unlink(Side::Group, key);
        self.unlink(Side::Peer, key);
        self.nodes[key as usize].in_peer.next = self.free;
        self.free = key;
        Some(value)
    }

    /// Every entry of `group`, least recently used first, with its peer and idle start.
    pub fn drain_group(&mut self, group: usize) -> impl Iterator<Item = (usize, u64, T)> + '_ {
        std::iter::from_fn(move || {
            let tail = self.groups.get(group)?.tail;
            let node = self.nodes.get(tail as usize)?;
            let (peer, since) = (node.peer as usize, node.since);
            self.remove(tail).map(|v| (peer, since, v))
        })
    }

    fn ends(&mut self, side: Side, key: Key) -> &mut Ends {
        let n = &self.nodes[key as usize];
        match side {
            Side::Group => &mut self.groups[n.group as usize],
            Side::Peer => &mut self.peers[n.peer as usize],
        }
    }

    fn links(&mut self, side: Side, key: Key) -> &mut Links {
        let n = &mut self.nodes[key as usize];
        match side {
            Side::Group => &mut n.in_group,
            Side::Peer => &mut n.in_peer,
        }
    }

    fn link_front(&mut self, side: Side, key: Key) {
        let ends = self.ends(side, key);
        let old = ends.head;
        ends.head = key;
        ends.len += 1;
        if old == NIL {
            ends.tail = key;
        }
        *self.links(side, key) = Links {
            prev: NIL,
            next: old,
        };
        if old != NIL {
            self.links(side, old).prev = key;
        }
    }

    fn unlink(&mut self, side: Side, key: Key) {
        let Links { prev, next } = std::mem::replace(self.links(side, key), UNLINKED);
        let ends = self.ends(side, key);
        ends.len -= 1;
        if prev == NIL {
            ends.head = next;
        }
        if next == NIL {
            ends.tail = prev;
        }
        if prev != NIL {
            self.links(side, prev).next = next;
        }
        if next != NIL {
            self.links(side, next).prev = prev;
        }
    }
}

/// The size of one cache entry.
#[cfg(test)]
pub fn node_size<T>() -> usize {
    std::mem::size_of::<Node<T>>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn take_is_most_recent_first_per_peer() {
        let mut l = Lru::new(2);
        l.push(0, 0, 1, "a1");
        l.push(0, 1, 2, "b1");
        l.push(0, 0, 3, "a2");
        assert_eq!(l.pop_mru(0), Some("a2"));
        assert_eq!(l.pop_mru(0), Some("a1"));
        assert_eq!(l.pop_mru(0), None);
        assert_eq!(l.group_len(0), 1);
        assert_eq!(l.pop_mru(1), Some("b1"));
        assert_eq!(l.pop_mru(9), None);
    }

    #[test]
    fn eviction_is_least_recent_first_per_group_across_peers() {
        let mut l = Lru::new(3);
        l.push(0, 0, 1, "a1");
        l.push(1, 2, 2, "other group");
        l.push(0, 1, 3, "b1");
        l.push(0, 0, 4, "a2");
        // Reusing a1's peer takes a2; the group's LRU is still a1.
        assert_eq!(l.pop_lru(0), Some("a1"));
        assert_eq!(l.pop_lru(0), Some("b1"));
        assert_eq!(l.peer_len(0), 1);
        assert_eq!(l.pop_lru(0), Some("a2"));
        assert_eq!(l.pop_lru(0), None);
        assert_eq!(l.group_len(1), 1);
    }

    #[test]
    fn idle_cutoff_pops_only_entries_old_enough() {
        let mut l = Lru::new(1);
        for (since, v) in [(10, 'a'), (20, 'b'), (30, 'c')] {
            l.push(0, 0, since, v);
        }
        assert_eq!(l.oldest(0), Some(10));
        assert_eq!(l.pop_idle_since(0, 20), Some('a'));
        assert_eq!(l.pop_idle_since(0, 20), Some('b'));
        assert_eq!(l.pop_idle_since(0, 20), None);
        assert_eq!(l.oldest(0), Some(30));
        assert_eq!(l.pop_idle_since(5, 100), None);
    }

    #[test]
    fn removal_from_the_middle_keeps_both_lists_whole() {
        let mut l = Lru::new(2);
        let a = l.push(0, 0, 1, 'a');
        let b = l.push(0, 0, 2, 'b');
        let c = l.push(0, 1, 3, 'c');
        assert_eq!(l.remove(b), Some('b'));
        assert_eq!(l.remove(b), None);
        assert_eq!((l.group_len(0), l.peer_len(0)), (2, 1));
        // The freed node is reused, and the lists are still in order.
        let d = l.push(0, 0, 4, 'd');
        assert_eq!(d, b);
        let order: Vec<_> = l.drain_group(0).collect();
        assert_eq!(order, [(0, 1, 'a'), (1, 3, 'c'), (0, 4, 'd')]);
        assert_eq!(l.remove(a), None);
        assert_eq!(l.remove(c), None);
        assert_eq!((l.peer_len(0), l.peer_len(1)), (0, 0));
    }

    #[test]
    fn a_warm_cache_allocates_no_new_nodes() {
        let mut l = Lru::new(1);
        for i in 0..4 {
            l.push(0, 0, i, i);
        }
        let cap = l.nodes.capacity();
        for i in 0..10_000 {
            l.pop_mru(0);
            l.push(0, 0, i, i);
        }
        assert_eq!((l.nodes.len(), l.nodes.capacity()), (4, cap));
        assert!(std::mem::size_of::<Node<u32>>() <= 40);
    }
}
