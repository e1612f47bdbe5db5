//! Publish gates: checks a new generation of a dataset must pass before
//! its manifest goes in (docs/FORMAT.md, "Publish gates"). A refusal is
//! `Error::PublishRefused`, naming the gate and the numbers; the publish
//! then stops before the manifest, so the current generation stays
//! served. With `force` the publish goes on, and the history records the
//! refusal it overrode.

use super::manifest::Manifest;

/// The gates a publish checks; none by default.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Gates {
    /// The largest change of the entry count against the current
    /// generation's, as a fraction of it (0.1: 10% more or fewer).
    pub max_entry_change: Option<f64>,
    /// The largest fraction of the current generation's keys whose value
    /// changed type ("string" to "map", say) in the new one.
    pub max_type_change: Option<f64>,
    /// Refuse a generation of no entries.
    pub refuse_empty: bool,
}

impl Gates {
    /// Whether any gate is set.
    pub fn any(&self) -> bool {
        self.max_entry_change.is_some() || self.max_type_change.is_some() || self.refuse_empty
    }

    /// What is wrong with these gates, if anything.
    pub fn check(&self) -> hashfile::Result<()> {
        for (name, value) in [
            ("max_entry_change", self.max_entry_change),
            ("max_type_change", self.max_type_change),
        ] {
            if let Some(v) = value {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(hashfile::Error::InvalidOption {
                        name,
                        reason: format!("must be a fraction from 0 (0.1 is 10%), not {v}"),
                    });
                }
            }
        }
        Ok(())
    }

    /// The first gate `new` does not pass over `current` (the generation
    /// published now; `None` for a dataset's first publish, which only
    /// `refuse_empty` judges): its name and the numbers. `type_changes`
    /// is asked only when `max_type_change` is set: how many keys of
    /// `current` changed value type in `new`.
    pub fn refusal(
        &self,
        current: Option<&Manifest>,
        new: &Manifest,
        type_changes: impl FnOnce() -> hashfile::Result<u64>,
    ) -> hashfile::Result<Option<(&'static str, String)>> {
        if self.refuse_empty && new.entries == 0 {
            return Ok(Some((
                "refuse_empty",
                "the new generation has no entries".to_owned(),
            )));
        }
        let Some(current) = current else {
            return Ok(None);
        };
        if let Some(most) = self.max_entry_change {
            let change = fraction(new.entries.abs_diff(current.entries), current.entries);
            if change > most {
                return Ok(Some((
                    "max_entry_change",
                    format!(
                        "{} entries against {} now ({}{:.1}%), more than {:.1}%",
                        new.entries,
                        current.entries,
                        if new.entries >= current.entries {
                            "+"
                        } else {
                            "-"
                        },
                        change * 100.0,
                        most * 100.0
                    ),
                )));
            }
        }
        if let Some(most) = self.max_type_change {
            let changed = type_changes()?;
            let share = fraction(changed, current.entries);
            if share > most {
                return Ok(Some((
                    "max_type_change",
                    format!(
                        "{changed} of {} keys changed value type ({:.1}%), more than {:.1}%",
                        current.entries,
                        share * 100.0,
                        most * 100.0
                    ),
                )));
            }
        }
        Ok(None)
    }
}

/// `part / whole`; a change from nothing is whole (infinite) unless it is
/// none.
fn fraction(part: u64, whole: u64) -> f64 {
    match (part, whole) {
        (0, _) => 0.0,
        (_, 0) => f64::INFINITY,
        _ => part as f64 / whole as f64,
    }
}

/// Judges publishing `new` at `manifest_at` over what `replaced` found
/// there, by `publish`'s gates: a refusal is `Error::PublishRefused`, or,
/// with `force`, recorded in `publish.forced` for the history. A current
/// manifest that cannot be read cannot be compared with: a gate that
/// would compare refuses then.
pub(super) fn judge(
    publish: &mut super::history::PublishOptions,
    manifest_at: &str,
    replaced: &super::retire::Replaced,
    new: &Manifest,
    remote: &hashfile_remote::RemoteOptions,
) -> hashfile::Result<()> {
    let gates = &publish.gates;
    if !gates.any() {
        return Ok(());
    }
    let refusal = match (replaced.unreadable(), gates.max_entry_change.or(gates.max_type_change)) {
        (Some(why), Some(_)) => Some((
            if gates.max_entry_change.is_some() { "max_entry_change" } else { "max_type_change" },
            format!("the current manifest cannot be read ({why}), so the new generation cannot be compared with it"),
        )),
        _ => match gates.refusal(replaced.current(), new, || type_changes(manifest_at, new, remote)) {
            Ok(refusal) => refusal,
            // The comparison itself failed (a shard of the current
            // generation damaged): the gate cannot judge, which refuses,
            // unless forced.
            Err(e) => Some((
                "max_type_change",
                format!("the new generation cannot be compared with the current one ({e})"),
            )),
        },
    };
    match refusal {
        None => Ok(()),
        Some((gate, what)) if publish.force => {
            publish.forced = Some(format!("{gate}: {what}"));
            Ok(())
        }
        Some((gate, what)) => Err(hashfile::Error::PublishRefused {
            path: Some(manifest_at.into()),
            gate,
            what,
        }),
    }
}

/// How many keys of the dataset published at `manifest_at` changed value
/// type in `new` (its shards written, its manifest not yet): a diff of the
/// two, keys only.
#[cfg(feature = "parallel")]
fn type_changes(
    manifest_at: &str,
    new: &Manifest,
    remote: &hashfile_remote::RemoteOptions,
) -> hashfile::Result<u64> {
    let current = crate::Table::of_dataset(super::Dataset::open(manifest_at, remote)?);
    let next = crate::Table::of_dataset(super::Dataset::of_manifest(
        manifest_at.to_owned(),
        new.to_json().as_bytes(),
        remote,
    )?);
    let pool = crate::pool::for_build(None)?;
    let mut ignore = |_: &str| Ok(());
    let summary = crate::diff::diff(
        &current,
        &next,
        crate::diff::DiffOptions { values: false },
        &pool,
        &mut ignore,
    )?;
    Ok(summary.type_changed())
}

#[cfg(not(feature = "parallel"))]
fn type_changes(
    _manifest_at: &str,
    _new: &Manifest,
    _remote: &hashfile_remote::RemoteOptions,
) -> hashfile::Result<u64> {
    Err(hashfile::Error::InvalidOption {
        name: "max_type_change",
        reason: "needs hashfile-runtime's parallel feature (a diff of the two generations)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest(entries: u64) -> Manifest {
        Manifest {
            hashfile_dataset: 2,
            generation: "g".into(),
            sequence: 1,
            routing: super::super::manifest::routing_name(),
            entries,
            shards: vec![],
        }
    }

    #[test]
    fn each_gate_names_its_numbers() {
        let gates = Gates {
            max_entry_change: Some(0.1),
            max_type_change: Some(0.01),
            refuse_empty: true,
        };
        let none = || Ok(0);
        assert_eq!(
            gates
                .refusal(Some(&manifest(100)), &manifest(105), none)
                .unwrap(),
            None
        );
        let (gate, what) = gates
            .refusal(Some(&manifest(100)), &manifest(80), none)
            .unwrap()
            .unwrap();
        assert_eq!(
            (gate, what.as_str()),
            (
                "max_entry_change",
                "80 entries against 100 now (-20.0%), more than 10.0%"
            )
        );
        let (gate, what) = gates
            .refusal(Some(&manifest(100)), &manifest(100), || Ok(2))
            .unwrap()
            .unwrap();
        assert_eq!(
            (gate, what.as_str()),
            (
                "max_type_change",
                "2 of 100 keys changed value type (2.0%), more than 1.0%"
            )
        );
        let (gate, _) = gates.refusal(None, &manifest(0), none).unwrap().unwrap();
        assert_eq!(gate, "refuse_empty");
        assert_eq!(
            gates.refusal(None, &manifest(3), none).unwrap(),
            None,
            "a first publish has nothing to compare"
        );
        assert!(Gates {
            max_entry_change: Some(-1.0),
            ..Gates::default()
        }
        .check()
        .is_err());
    }
}
