//! The TaskManager side: loading a TDD's input gates, with offloaded descriptor groups fetched
//! and decoded once per TaskManager and kept in a cache bounded in bytes.
//!
//! Flink keeps decoded groups in a cache of 100 entries that expire 300 s after access
//! (FLINK-32386) and bounds the blob files separately (100 MiB LRU, FLINK-23354). Conflux bounds
//! the decoded groups by their bytes instead, which is what memory pressure is about: one group
//! of a 100k x 100k job is megabytes, while 100 small pointwise groups are nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use conflux_blob_api::{BlobKey, BlobReader, JobId};
use conflux_graph::index_u32;
use lru::LruCache;

use crate::offload::MaybeOffloaded;
use crate::tdd::{InputGateDeploymentDescriptor, ShuffleDescriptorGroup};
use crate::wire;
use crate::{DeployError, ShuffleDescriptor};

/// Flink's PermanentBlobCache limit for descriptor blobs, used as the default budget: 100 MiB.
pub const DEFAULT_CACHE_BYTES: usize = 100 << 20;

/// Counters of a [`ShuffleDescriptorsCache`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups served from the cache.
    pub hits: u64,
    /// Lookups that fetched and decoded the blob.
    pub misses: u64,
    /// Entries evicted to stay within the budget.
    pub evictions: u64,
    /// Bytes currently held (estimated decoded size).
    pub bytes: usize,
}

/// Decoded groups shared by the TaskManagers of one process, such as a simulator running ten
/// thousand of them. Every TaskManager still fetches each group itself (through its own blob
/// reader, which verifies the bytes against the key's content digest), but a group that another
/// TaskManager of this process already decoded from the same key is taken from the pool instead
/// of being decoded again: equal digests mean equal bytes, so the result is the same. A real
/// TaskManager is a process of its own and decodes once. Each cache still charges the group's
/// full size to its own budget.
#[derive(Debug, Default)]
pub struct SharedDecodedGroups {
    groups: Mutex<HashMap<(JobId, BlobKey), Weak<ShuffleDescriptorGroup>>>,
}

impl SharedDecodedGroups {
    /// An empty pool.
    pub fn new() -> SharedDecodedGroups {
        SharedDecodedGroups::default()
    }

    /// The live pooled group of `key`, if any.
    fn get(&self, job: JobId, key: BlobKey) -> Option<Arc<ShuffleDescriptorGroup>> {
        let groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        groups.get(&(job, key)).and_then(Weak::upgrade)
    }

    /// The pooled instance equal to `group` (decoded from `key`), pooling it if it is the first.
    fn intern(
        &self,
        job: JobId,
        key: BlobKey,
        group: Arc<ShuffleDescriptorGroup>,
    ) -> Arc<ShuffleDescriptorGroup> {
        let mut groups = self
            .groups
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(existing) = groups.get(&(job, key)).and_then(Weak::upgrade) {
            return existing;
        }
        groups.retain(|_, weak| weak.strong_count() > 0);
        groups.insert((job, key), Arc::downgrade(&group));
        group
    }
}

/// Decoded offloaded descriptor groups of one TaskManager, keyed by (job, blob key), LRU within a
/// byte budget. Not synchronised: a TaskManager wraps it in a mutex if it deploys concurrently.
#[derive(Debug)]
pub struct ShuffleDescriptorsCache {
    entries: LruCache<(JobId, BlobKey), (Arc<ShuffleDescriptorGroup>, usize)>,
    budget: usize,
    stats: CacheStats,
    shared: Option<Arc<SharedDecodedGroups>>,
}

impl ShuffleDescriptorsCache {
    /// A cache holding at most `budget` bytes of decoded groups. A single group larger than the
    /// budget is decoded and returned but not kept.
    pub fn new(budget: usize) -> ShuffleDescriptorsCache {
        ShuffleDescriptorsCache {
            entries: LruCache::unbounded(),
            budget,
            stats: CacheStats::default(),
            shared: None,
        }
    }

    /// A cache as [`new`](Self::new) whose decoded groups are pooled with other caches of this
    /// process (see [`SharedDecodedGroups`]).
    pub fn with_shared_decoded(
        budget: usize,
        shared: Arc<SharedDecodedGroups>,
    ) -> ShuffleDescriptorsCache {
        ShuffleDescriptorsCache {
            shared: Some(shared),
            ..ShuffleDescriptorsCache::new(budget)
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> CacheStats {
        self.stats
    }

    /// Number of cached groups.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is cached.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The decoded group of `key`, from the cache or read through `reader` and decoded once.
    ///
    /// # Errors
    /// [`DeployError::Blob`] when the blob cannot be read, [`DeployError::Wire`] when its bytes
    /// are not a descriptor group.
    pub fn get_or_load(
        &mut self,
        job: JobId,
        key: &BlobKey,
        reader: &dyn BlobReader,
    ) -> Result<Arc<ShuffleDescriptorGroup>, DeployError> {
        if let Some((group, _)) = self.entries.get(&(job, *key)) {
            self.stats.hits += 1;
            return Ok(Arc::clone(group));
        }
        self.stats.misses += 1;
        let bytes = reader.read(key)?;
        let pooled = self
            .shared
            .as_ref()
            .and_then(|shared| shared.get(job, *key));
        let group = match (pooled, &self.shared) {
            (Some(group), _) => group,
            (None, Some(shared)) => {
                shared.intern(job, *key, Arc::new(wire::decode_descriptor_group(&bytes)?))
            }
            (None, None) => Arc::new(wire::decode_descriptor_group(&bytes)?),
        };
        let size = decoded_bytes(&group);
        if size <= self.budget {
            while self.stats.bytes + size > self.budget {
                let Some((_, (_, evicted))) = self.entries.pop_lru() else {
                    break;
                };
                self.stats.bytes -= evicted;
                self.stats.evictions += 1;
            }
            self.entries.put((job, *key), (Arc::clone(&group), size));
            self.stats.bytes += size;
        }
        Ok(group)
    }

    /// Drops every group of a job (the job ended on this TaskManager).
    pub fn clear_job(&mut self, job: JobId) {
        let keys: Vec<(JobId, BlobKey)> = self
            .entries
            .iter()
            .filter(|((j, _), _)| *j == job)
            .map(|(k, _)| *k)
            .collect();
        for k in keys {
            if let Some((_, size)) = self.entries.pop(&k) {
                self.stats.bytes -= size;
            }
        }
    }
}

fn decoded_bytes(group: &ShuffleDescriptorGroup) -> usize {
    std::mem::size_of::<ShuffleDescriptorGroup>()
        + group.descriptors.capacity() * std::mem::size_of::<ShuffleDescriptor>()
        + group.indices.as_ref().map_or(0, |i| i.capacity() * 4)
}

/// An input gate as loaded on a TaskManager: its decoded descriptor groups (shared with the
/// TaskManager's cache, so a gate of 10,000 channels costs no per-channel copy) and, only when
/// several groups were applied (hybrid), where each channel's descriptor is.
#[derive(Clone, Debug)]
pub struct LoadedInputGate {
    groups: Vec<Arc<ShuffleDescriptorGroup>>,
    /// Per channel `(group, index in group)`, when there is more than one group.
    overlay: Option<Vec<(u32, u32)>>,
    channels: u32,
}

impl LoadedInputGate {
    /// Number of input channels.
    pub fn number_of_channels(&self) -> u32 {
        self.channels
    }

    /// The descriptor of one channel. O(1).
    ///
    /// # Panics
    /// If `channel` is not below [`number_of_channels`](Self::number_of_channels).
    pub fn descriptor(&self, channel: u32) -> &ShuffleDescriptor {
        assert!(
            channel < self.channels,
            "channel {channel} of {}",
            self.channels
        );
        match &self.overlay {
            None => &self.groups[0].descriptors[channel as usize],
            Some(overlay) => {
                let (g, i) = overlay[channel as usize];
                &self.groups[g as usize].descriptors[i as usize]
            }
        }
    }

    /// Every channel's descriptor, in channel order.
    pub fn descriptors(&self) -> impl Iterator<Item = &ShuffleDescriptor> + '_ {
        (0..self.channels).map(move |c| self.descriptor(c))
    }
}

/// Loads an input gate: applies its serialised groups in order (inline ones decoded here,
/// offloaded ones through `cache`, decoded once per TaskManager), where a later group may only
/// fill a channel that is empty or unknown (Flink's rule). A gate with one complete group costs
/// O(1) beyond the decoding; several groups cost O(channels).
///
/// # Errors
/// [`DeployError::ChannelConflict`] when a group overwrites a known descriptor,
/// [`DeployError::ChannelOutOfRange`] for a position past the channels, and
/// [`DeployError::MissingChannels`] when a channel stays empty; blob and wire errors as
/// [`ShuffleDescriptorsCache::get_or_load`].
pub fn load_input_gate(
    gate: &InputGateDeploymentDescriptor,
    job: JobId,
    reader: &dyn BlobReader,
    cache: &mut ShuffleDescriptorsCache,
) -> Result<LoadedInputGate, DeployError> {
    let channels = gate.number_of_channels;
    let mut groups = Vec::with_capacity(gate.descriptor_groups.len());
    for serialized in gate.descriptor_groups.iter() {
        groups.push(match serialized {
            MaybeOffloaded::Inline(bytes) => Arc::new(wire::decode_descriptor_group(bytes)?),
            MaybeOffloaded::Offloaded { key, .. } => cache.get_or_load(job, key, reader)?,
        });
    }
    if let [only] = groups.as_slice() {
        if only.indices.is_none() && only.descriptors.len() == channels as usize {
            return Ok(LoadedInputGate {
                groups,
                overlay: None,
                channels,
            });
        }
    }
    const EMPTY: (u32, u32) = (u32::MAX, u32::MAX);
    let mut overlay = vec![EMPTY; channels as usize];
    for (g, group) in groups.iter().enumerate() {
        for (i, (position, _)) in group.entries().enumerate() {
            let slot =
                overlay
                    .get_mut(position as usize)
                    .ok_or(DeployError::ChannelOutOfRange {
                        group: gate.group.0,
                        position,
                        channels,
                    })?;
            if *slot != EMPTY {
                let (eg, ei) = *slot;
                if !groups[eg as usize].descriptors[ei as usize].is_unknown() {
                    return Err(DeployError::ChannelConflict {
                        group: gate.group.0,
                        position,
                    });
                }
            }
            // Group and entry counts are bounded by the channel count (u32).
            *slot = (index_u32(g), index_u32(i));
        }
    }
    let missing = overlay.iter().filter(|s| **s == EMPTY).count();
    if missing > 0 {
        return Err(DeployError::MissingChannels {
            group: gate.group.0,
            missing,
        });
    }
    Ok(LoadedInputGate {
        groups,
        overlay: Some(overlay),
        channels,
    })
}
