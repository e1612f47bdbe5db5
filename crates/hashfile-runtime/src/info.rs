//! `info`: what an open store or dataset is, as one tree every binding
//! converts alike (Ruby: a Hash of Symbols, names as Symbols; Python: a
//! dict of str), so that each language's `info` has the same keys.

use crate::{Store, Table};

/// A value in the tree.
#[derive(Clone, Debug, PartialEq)]
pub enum InfoValue {
    /// A count or a size.
    Int(u64),
    /// A ratio or a parameter.
    Float(f64),
    /// Text: a location, an ETag, a checksum.
    Text(String),
    /// A name out of a fixed set (an index layout, a codec): a Symbol in
    /// Ruby, a str in Python.
    Name(&'static str),
    /// Yes or no.
    Bool(bool),
    /// Nothing known (a server that sent no ETag).
    Nil,
    /// Named parts.
    Map(Info),
    /// A list (a dataset's shards).
    List(Vec<InfoValue>),
}

/// Named values in order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Info(pub Vec<(&'static str, InfoValue)>);

impl Info {
    fn put(&mut self, key: &'static str, value: impl Into<InfoValue>) -> &mut Info {
        self.0.push((key, value.into()));
        self
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&InfoValue> {
        self.0.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// Adds a binding's memo: its entries now and its limit.
    pub fn with_memo(mut self, entries: usize, limit: usize) -> Info {
        let mut memo = Info::default();
        memo.put("entries", entries as u64)
            .put("limit", limit as u64);
        self.put("memo", memo);
        self
    }
}

impl From<u64> for InfoValue {
    fn from(v: u64) -> InfoValue {
        InfoValue::Int(v)
    }
}

impl From<u32> for InfoValue {
    fn from(v: u32) -> InfoValue {
        InfoValue::Int(v.into())
    }
}

impl From<usize> for InfoValue {
    fn from(v: usize) -> InfoValue {
        InfoValue::Int(v as u64)
    }
}

impl From<f64> for InfoValue {
    fn from(v: f64) -> InfoValue {
        InfoValue::Float(v)
    }
}

impl From<bool> for InfoValue {
    fn from(v: bool) -> InfoValue {
        InfoValue::Bool(v)
    }
}

impl From<String> for InfoValue {
    fn from(v: String) -> InfoValue {
        InfoValue::Text(v)
    }
}

impl From<&str> for InfoValue {
    fn from(v: &str) -> InfoValue {
        InfoValue::Text(v.to_owned())
    }
}

impl From<Option<String>> for InfoValue {
    fn from(v: Option<String>) -> InfoValue {
        v.map_or(InfoValue::Nil, InfoValue::Text)
    }
}

impl From<Info> for InfoValue {
    fn from(v: Info) -> InfoValue {
        InfoValue::Map(v)
    }
}

impl Table {
    /// What this store or dataset is: entries, sizes, its index and
    /// parameters, compression, a remote store's cache and identity; a
    /// dataset's manifest and shards. The tree docs/RUBY.md and
    /// docs/PYTHON.md show, the same in every language.
    pub fn info(&self) -> hashfile::Result<Info> {
        let mut info = match self {
            Table::Store(store) => store_info(store)?,
            Table::Dataset(dataset, _) => {
                let manifest = dataset.manifest();
                let mut out = Info::default();
                out.put("dataset", dataset.location())
                    .put("generation", manifest.generation.as_str())
                    .put("sequence", manifest.sequence)
                    .put("routing", manifest.routing.as_str())
                    .put("entries", manifest.entries)
                    .put(
                        "file_bytes",
                        manifest
                            .shards
                            .iter()
                            .map(|s| s.bytes + s.overlays.iter().map(|o| o.bytes).sum::<u64>())
                            .sum::<u64>(),
                    );
                let shards = manifest
                    .shards
                    .iter()
                    .enumerate()
                    .map(|(i, shard)| {
                        let mut entry = Info::default();
                        entry
                            .put("file", dataset.shard_location(i))
                            .put("entries", shard.live_entries())
                            .put("bytes", shard.bytes)
                            .put("checksum", shard.checksum.as_str())
                            .put("open", dataset.opened_shard(i).is_some());
                        // A delta generation's shard: its base's entries,
                        // and its overlays, oldest first.
                        if !shard.overlays.is_empty() {
                            let overlays = shard
                                .overlays
                                .iter()
                                .map(|o| {
                                    let mut overlay = Info::default();
                                    overlay
                                        .put("file", dataset.file_location(&o.file))
                                        .put("entries", o.entries)
                                        .put("bytes", o.bytes)
                                        .put("checksum", o.checksum.as_str());
                                    InfoValue::Map(overlay)
                                })
                                .collect();
                            entry
                                .put("base_entries", shard.entries)
                                .put("overlays", InfoValue::List(overlays));
                        }
                        InfoValue::Map(entry)
                    })
                    .collect();
                out.put("shards", InfoValue::List(shards));
                out
            }
        };
        info.put("remote", self.is_remote());
        Ok(info)
    }
}

fn store_info(store: &Store) -> hashfile::Result<Info> {
    let facts = store.info();
    let header = store.header();
    let mut out = Info::default();
    out.put(
        "format_version",
        format!("{}.{}", header.major, header.minor),
    )
    .put("entries", facts.entries)
    .put("index", InfoValue::Name(facts.index.name()))
    .put("file_bytes", facts.file_bytes)
    .put("mphf_bits_per_key", facts.mphf_bits_per_key)
    .put("seed_bits_per_key", facts.seed_bits_per_key);
    let mut sections = Info::default();
    for (name, bytes) in &facts.section_bytes {
        sections.put(name, *bytes);
    }
    out.put("sections", sections);
    let (p, g) = (&header.parameters, &header.geometry);
    let mut parameters = Info::default();
    parameters
        .put("keys_per_bucket", p.keys_per_bucket)
        .put("load_factor", p.load_factor)
        .put("dense_key_fraction", p.dense_key_fraction)
        .put("dense_bucket_fraction", p.dense_bucket_fraction)
        .put("seed_block_len", header.seed_block_len)
        .put("hash_seed", header.hash_seed)
        .put("buckets", g.bucket_count)
        .put("slots", g.slot_count)
        .put("parts", g.part_count);
    out.put("parameters", parameters);
    if let Some(summary) = store.compression_stats()? {
        let stats = summary.stats;
        let mut compression = Info::default();
        // `auto` records level 0 where it chose to compress nothing.
        let codec = if stats.level == 0 && stats.values == 0 {
            "none"
        } else {
            "zstd"
        };
        compression
            .put("codec", InfoValue::Name(codec))
            .put("auto", stats.auto)
            .put("level", InfoValue::Int(stats.level.max(0) as u64))
            .put("long_level", InfoValue::Int(stats.long_level.max(0) as u64))
            .put("long_value_bytes", hashfile::compress::LONG_VALUE_LEN)
            .put("values", stats.values)
            .put("decoded_bytes", stats.decoded_bytes)
            .put("stored_bytes", stats.stored_bytes)
            .put("dictionary_bytes", summary.dictionary_bytes)
            .put("ratio", summary.ratio());
        // The stats are informational (no read depends on them); stats no
        // writer writes are said here, as `verify` reports them.
        if let Err(what) = stats.check() {
            compression.put("damaged", what);
        }
        if let Some(items) = store.item_cache_stats() {
            let mut cache = Info::default();
            cache
                .put("entries", items.entries)
                .put("bytes", items.bytes)
                .put("limit", hashfile::compress::ITEM_CACHE_LEN)
                .put("hits", items.hits)
                .put("misses", items.misses);
            compression.put("item_cache", cache);
        }
        out.put("compression", compression);
    }
    if let Some(remote) = store.source().block_cache() {
        let stats = remote.stats();
        let object = remote.fetcher();
        let mut cache = Info::default();
        cache
            .put("block_bytes", remote.block_len())
            .put("hits", stats.hits)
            .put("misses", stats.misses)
            .put("round_trips", stats.fetches)
            .put("requests", object.requests())
            .put("bytes_fetched", stats.bytes_fetched)
            .put("resident_bytes", stats.resident_bytes)
            .put("pinned_bytes", stats.pinned_bytes);
        out.put("cache", cache)
            .put("etag", object.identity().etag.clone())
            .put("last_modified", object.identity().last_modified.clone());
    }
    Ok(out)
}
