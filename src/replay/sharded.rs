//! The sharded replay (issue 13): the flows stepped on several threads, with the report the
//! single-threaded [`super::run`] gives, byte for byte.
//!
//! Everything that crosses flows stays between the two hosts of a flow: pairing (CM and PSN
//! agreement), responses acting on the request flow, CNPs. So the flows are sharded by their
//! unordered address pair, and each shard is an [`Engine`] of its own that sees its packets
//! in the order the single engine would step them. One engine in front
//! ([`Engine::front`]) does what is global: the capture's counters, each file's ICRC verdict
//! (which holds and releases packets, §6.5), PFC, tcp_bth and the frames without a flow.
//!
//! Merging gives the flows their single-engine ids back (the order of the steps that created
//! them) and sorts the findings by frame, stable: a frame's findings all come from one engine
//! (its shard, or the front), in the order that engine made them.
//!
//! What differs from one engine: the cap on CM requests waiting for their reply
//! (65,536) holds per shard; and observers are told only of progress.

// Indexing cannot panic here: shard numbers come from `shard_of(.., n)` (< n), flow ids are
// positions in their shard's flow list.
#![allow(clippy::indexing_slicing)]

use std::ops::ControlFlow;
use std::sync::mpsc;

use super::engine::Forwarded;
use super::flow::Flow;
use super::{
    Engine, EngineConfig, Observer, Replay, Replayed, dissect_options, prepare_in, step_slot, stops,
};
use crate::capture::CaptureError;
use crate::frame::Frame;
use crate::source::{self, FrameSource, Threads};

/// Packets sent to a shard at once.
const BATCH: usize = 4096;
/// Batches waiting for a shard, at most (the front waits beyond).
const QUEUE: usize = 4;

/// Replay every frame of `source` with its flows in `shards` engines on as many threads, the
/// frames read (and dissected, while the front is busy) as `threads` says. `observer` is told
/// of progress only.
pub fn run_sharded<S: FrameSource + ?Sized>(
    source: &mut S,
    cfg: &EngineConfig,
    shards: usize,
    threads: Threads,
    observer: &mut impl Observer,
) -> Replayed {
    let shards = shards.max(1);
    let options = dissect_options(cfg);
    let prepare = move |frame: &Frame<'_>, told: source::Prepare<'_>, place: &mut _| {
        if told.busy {
            prepare_in(place, frame, &options, told.out);
        }
    };
    let mut front = Engine::front(cfg.clone(), shards);
    let mut frames = 0u64;
    let mut stopped = false;
    let (result, parts) = std::thread::scope(|scope| {
        let mut to_shards = Vec::with_capacity(shards);
        let mut workers = Vec::with_capacity(shards);
        let (back_tx, back) = mpsc::channel::<Vec<Forwarded>>();
        for _ in 0..shards {
            let (tx, rx) = mpsc::sync_channel::<Vec<Forwarded>>(QUEUE);
            let back_tx = back_tx.clone();
            let cfg = cfg.clone();
            to_shards.push(tx);
            workers.push(scope.spawn(move || {
                let mut engine = Engine::shard(cfg);
                for mut batch in rx {
                    for f in batch.drain(..) {
                        engine.step_forwarded(f);
                    }
                    // the front reuses it (it may have ended: then it is dropped)
                    let _ = back_tx.send(batch);
                }
                engine.finish_shard()
            }));
        }
        drop(back_tx);
        // Hand the full lists (all of them at the end) to their shards, a spare in their place.
        let send = |front: &mut Engine, all: bool| {
            for (i, list) in front.forwarded().iter_mut().enumerate() {
                if list.len() >= BATCH || (all && !list.is_empty()) {
                    let spare = back
                        .try_recv()
                        .unwrap_or_else(|_| Vec::with_capacity(BATCH));
                    let full = std::mem::replace(list, spare);
                    // a shard ends only when its queue is dropped, below
                    let _ = to_shards[i].send(full);
                }
            }
        };
        let result = source::drive(
            source,
            threads,
            prepare,
            |slot, at| -> Result<ControlFlow<()>, CaptureError> {
                if !step_slot(&mut front, slot, &options, &mut ()) {
                    return Ok(ControlFlow::Continue(()));
                }
                send(&mut front, false);
                frames += 1;
                if stops(observer, frames, at.bytes) {
                    stopped = true;
                    return Ok(ControlFlow::Break(()));
                }
                Ok(ControlFlow::Continue(()))
            },
        );
        front.settle_held();
        send(&mut front, true);
        drop(to_shards);
        let parts: Vec<(Replay, Vec<u64>)> = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        (result, parts)
    });
    Replayed {
        replay: merge(front.finish(), parts),
        error: result.err(),
        stopped,
    }
}

/// One report from the front's and the shards': the flows numbered in the order the single
/// engine created them, the findings sorted by frame.
fn merge(mut front: Replay, shards: Vec<(Replay, Vec<u64>)>) -> Replay {
    let mut created: Vec<(u64, u32, u32)> = Vec::new();
    for (s, (_, seqs)) in shards.iter().enumerate() {
        let s = u32::try_from(s).unwrap_or(u32::MAX);
        created.extend(
            seqs.iter()
                .enumerate()
                .map(|(id, &seq)| (seq, s, u32::try_from(id).unwrap_or(u32::MAX))),
        );
    }
    // one step creates one flow at most: the order is total
    created.sort_unstable();
    let mut ids: Vec<Vec<u32>> = shards.iter().map(|(_, seqs)| vec![0; seqs.len()]).collect();
    for (global, &(_, s, local)) in created.iter().enumerate() {
        ids[s as usize][local as usize] = u32::try_from(global).unwrap_or(u32::MAX);
    }
    // each flow moved to its place as its shard is taken apart: one shard's list at a time
    // besides the merged one
    let mut placed: Vec<Option<Flow>> = Vec::with_capacity(created.len());
    placed.resize_with(created.len(), || None);
    drop(created);
    for (s, (part, _)) in shards.into_iter().enumerate() {
        let ids = &ids[s];
        front.capture.truncated_frames += part.capture.truncated_frames;
        front.capture.malformed_frames += part.capture.malformed_frames;
        front.capture.icrc_errors += part.capture.icrc_errors;
        // the shard's host ids, as the merged report numbers them
        let hosts: Vec<u32> = part
            .hosts
            .addrs()
            .iter()
            .map(|&a| front.hosts.intern(a))
            .collect();
        for (local, mut f) in part.flows.into_iter().enumerate() {
            f.set_peer(f.peer().map(|p| ids[p as usize]));
            f.key.src = hosts[f.key.src as usize];
            f.key.dst = hosts[f.key.dst as usize];
            placed[ids[local] as usize] = Some(f);
        }
        front.events.extend(part.events.into_iter().map(|mut e| {
            e.flow = e.flow.map(|id| ids[id as usize]);
            e
        }));
    }
    // every place was filled (ids are a permutation); collected in place
    front.flows = placed.into_iter().flatten().collect();
    front.events.sort_by_key(|e| e.frame);
    front
}
