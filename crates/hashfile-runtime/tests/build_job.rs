//! `BuildJob`: the protocol between a build's thread and the binding's
//! waiting thread: every report waits for its answer, a "stop" answer or a
//! cancel reaches the build, a panic comes back as `Died`.

#![cfg(feature = "import")]

use std::time::Duration;

use hashfile::pipeline::{Phase, Progress, Summary};
use hashfile_runtime::{BuildEvent, BuildJob};

const WAIT: Duration = Duration::from_secs(10);

fn report(phase: Phase, entries: u64) -> Progress {
    Progress {
        phase,
        entries,
        bytes_read: entries * 10,
        bytes_total: None,
    }
}

/// A build that reports each phase, then returns the entries it reported.
fn three_reports() -> BuildJob {
    BuildJob::start(Box::new(|cancel, report_to| {
        for (i, phase) in [Phase::Reading, Phase::Building, Phase::Publishing]
            .into_iter()
            .enumerate()
        {
            report_to(&report(phase, i as u64 + 1))?;
        }
        cancel.check()?;
        Ok(Summary {
            entries: 3,
            file_bytes: 100,
            spilled: None,
        })
    }))
    .unwrap()
}

fn next(job: &BuildJob) -> BuildEvent {
    job.next(WAIT).expect("an event within 10 s")
}

#[test]
fn each_report_waits_for_its_answer_and_the_result_comes_last() {
    let job = three_reports();
    for expected in 1..=3 {
        match next(&job) {
            BuildEvent::Progress(p) => assert_eq!(p.entries, expected),
            _ => panic!("report {expected} expected"),
        }
        // Unanswered, the build waits: nothing more comes.
        assert!(job.next(Duration::from_millis(50)).is_none());
        job.answer(true);
    }
    match next(&job) {
        BuildEvent::Done(Ok(summary)) => assert_eq!(summary.entries, 3),
        _ => panic!("the result expected"),
    }
}

#[test]
fn a_stop_answer_at_the_last_report_fails_the_build_as_cancelled() {
    let job = three_reports();
    for go_on in [true, true, false] {
        assert!(matches!(next(&job), BuildEvent::Progress(_)));
        job.answer(go_on);
    }
    match next(&job) {
        BuildEvent::Done(Err(hashfile::Error::Cancelled)) => {}
        _ => panic!("a cancelled build expected"),
    }
}

#[test]
fn a_cancel_reaches_the_build_even_when_the_answer_is_go_on() {
    let job = three_reports();
    assert!(matches!(next(&job), BuildEvent::Progress(_)));
    job.cancel();
    job.answer(true);
    assert!(matches!(
        next(&job),
        BuildEvent::Done(Err(hashfile::Error::Cancelled))
    ));
}

#[test]
fn a_dropped_job_stops_its_build() {
    let (tx, rx) = std::sync::mpsc::channel();
    let job = BuildJob::start(Box::new(move |cancel, _| {
        while cancel.check().is_ok() {
            std::thread::sleep(Duration::from_millis(5));
        }
        tx.send(()).unwrap();
        Err(hashfile::Error::Cancelled)
    }))
    .unwrap();
    drop(job);
    rx.recv_timeout(WAIT).expect("the build saw the cancel");
}

#[test]
fn a_panicking_build_comes_back_as_died_with_its_message() {
    let job = BuildJob::start(Box::new(|_, _| panic!("the build broke"))).unwrap();
    match next(&job) {
        BuildEvent::Died(Some(payload)) => {
            assert_eq!(payload.downcast_ref::<&str>(), Some(&"the build broke"));
        }
        _ => panic!("Died expected"),
    }
}
