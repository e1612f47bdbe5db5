//! What every binding's `history` and `rollback` do, once: the options
//! judged, the call, and its answer as the tree `info` uses, so each
//! language answers with the same keys.

use crate::dataset::history::{History, Publish, PublishOptions};
use crate::dataset::manifest::Manifest;
use crate::info::{Info, InfoValue};
use crate::options::{generations_request, Call, Given, Language};

/// `history(dataset, **options)`: the publishes the dataset keeps, newest
/// (the current one) first, each a map (`publish_info`).
pub fn history(location: &str, given: &Given, language: Language) -> hashfile::Result<InfoValue> {
    let request = generations_request(Call::History, location, given, language)?;
    let history = crate::dataset::history(location, &request.remote)?;
    Ok(history_info(&history))
}

/// `rollback(dataset, generation = nil, **options)`: makes `generation`
/// (or the newest kept one before the current one) current again, and
/// answers what was published (`published_info`). The publish keeps as
/// many publishes, as long, as the current one did.
pub fn rollback(
    location: &str,
    generation: Option<&str>,
    given: &Given,
    language: Language,
) -> hashfile::Result<InfoValue> {
    let request = generations_request(Call::Rollback, location, given, language)?;
    let mut publish = PublishOptions::by(format!(
        "hashfile {} ({})",
        env!("CARGO_PKG_VERSION"),
        language.name()
    ));
    publish.note = request.note;
    if let Ok(history) = crate::dataset::history(location, &request.remote) {
        if let Some(current) = history.publishes.first() {
            publish.keep = current.keep;
            publish.retain = std::time::Duration::from_secs(current.retain_seconds);
        }
    }
    let manifest = crate::dataset::rollback(location, generation, &publish, &request.remote)?;
    Ok(published_info(&manifest))
}

/// A history as a list of maps, newest first.
pub fn history_info(history: &History) -> InfoValue {
    InfoValue::List(
        history
            .publishes
            .iter()
            .enumerate()
            .map(|(i, p)| publish_info(p, i == 0))
            .collect(),
    )
}

/// One publish: generation, published_at, entries, bytes, shards, tool,
/// note, rollback, forced (the gate's refusal it overrode, or nil),
/// current, keep, retain_seconds, sequence.
pub fn publish_info(publish: &Publish, current: bool) -> InfoValue {
    let text = |t: &Option<String>| t.clone().map_or(InfoValue::Nil, InfoValue::Text);
    InfoValue::Map(Info(vec![
        ("generation", InfoValue::Text(publish.generation.clone())),
        ("published_at", text(&publish.published_at)),
        ("entries", InfoValue::Int(publish.entries)),
        ("bytes", InfoValue::Int(publish.bytes)),
        ("shards", InfoValue::Int(publish.shards.into())),
        ("tool", text(&publish.tool)),
        ("note", text(&publish.note)),
        ("rollback", InfoValue::Bool(publish.rollback)),
        ("forced", text(&publish.forced)),
        ("current", InfoValue::Bool(current)),
        ("keep", InfoValue::Int(publish.keep.into())),
        ("retain_seconds", InfoValue::Int(publish.retain_seconds)),
        ("sequence", InfoValue::Int(publish.sequence)),
    ]))
}

/// What a rollback published: generation, entries, shards, sequence.
pub fn published_info(manifest: &Manifest) -> InfoValue {
    InfoValue::Map(Info(vec![
        ("generation", InfoValue::Text(manifest.generation.clone())),
        ("entries", InfoValue::Int(manifest.entries)),
        ("shards", InfoValue::Int(manifest.shards.len() as u64)),
        ("sequence", InfoValue::Int(manifest.sequence)),
    ]))
}
