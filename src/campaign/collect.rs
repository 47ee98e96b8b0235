//! The collector: the one place that writes a campaign's output. It takes
//! the workers' cases as they finish, writes each finding at once, keeps the
//! summary and the progress bar, and writes `summary.json` every 2 s.

use super::pattern_stats::Hits;
use super::worker::{CaseDone, Report};
use super::{say, write_summary, CampaignConfig, CampaignError, Summary};
use crate::finding::FindingStore;
use crate::oracle::{OracleKind, Verdict};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// How often `summary.json` is rewritten during a campaign.
const FLUSH_EVERY: Duration = Duration::from_secs(2);

pub(super) struct Collector<'a> {
    pub cfg: &'a CampaignConfig,
    pub store: &'a mut FindingStore,
    pub summary: &'a mut Summary,
    pub hits: &'a mut Hits,
    pub progress: &'a indicatif::ProgressBar,
    pub start: Instant,
    /// Set when every `--until-known` issue was found: the workers claim no
    /// more cases.
    pub stop: &'a AtomicBool,
}

impl Collector<'_> {
    /// Until every worker has hung up, or an output error.
    pub fn run(&mut self, rx: Receiver<Report>) -> Result<(), CampaignError> {
        let mut last_flush = Instant::now();
        loop {
            match rx.recv_timeout(FLUSH_EVERY) {
                Ok(Report::Case(done)) => self.record(*done)?,
                Ok(Report::Recovering { case }) => say(
                    self.progress,
                    format!(
                        "the server went away or hung during case {case}; waiting up to {:?} for it",
                        self.cfg.recover_wait
                    ),
                ),
                Ok(Report::Stopped(why)) => {
                    if self.summary.stopped.is_none() {
                        self.summary.stopped = Some(why);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Ok(()),
            }
            if last_flush.elapsed() > FLUSH_EVERY {
                self.summary.finish(self.start.elapsed());
                write_summary(&self.cfg.out, self.summary)?;
                last_flush = Instant::now();
            }
        }
    }

    fn record(&mut self, done: CaseDone) -> Result<(), CampaignError> {
        let recording = Instant::now();
        let summary = &mut *self.summary;
        summary.note_case(&done.case);
        if let Some((name, hit)) = &done.pattern {
            self.hits.note(name, done.case.isolation, *hit);
        }
        summary.note_history(&done.case, &done.history, &done.stats);
        for (rec, script) in done.findings {
            let path = self
                .store
                .write(rec.clone(), &script)
                .map_err(CampaignError::Output)?;
            if rec.finding.verdict == Verdict::Violation {
                let what = match &rec.finding.known {
                    _ if rec.finding.oracle == OracleKind::Fidelity => {
                        "fidelity (txfuzz changed the engine's behaviour)".to_string()
                    }
                    Some(k) => format!("known violation ({})", k.id),
                    None if rec.finding.kind == crate::oracle::view::QUERY_BUG => {
                        "query bug (the statement alone answers wrongly)".to_string()
                    }
                    None => "violation".to_string(),
                };
                say(
                    self.progress,
                    format!(
                        "{what} [{}:{}] case {}: {} -> {}",
                        rec.finding.oracle,
                        rec.finding.kind,
                        rec.case.index,
                        rec.finding.summary,
                        path.display()
                    ),
                );
            }
            summary.note_finding(&rec.finding, &path);
            if let (Verdict::Violation, Some(k)) = (rec.finding.verdict, &rec.finding.known) {
                summary.note_known_first(&k.id, rec.case.index, self.start.elapsed().as_secs_f64());
            }
            crate::finding::note_distinct(
                &mut summary.distinct,
                &rec.finding,
                &rec.case,
                &rec.engine,
                &path,
            );
        }
        summary.note_phase("record", recording.elapsed().as_secs_f64());
        if summary.found_every_target() && !self.stop.swap(true, Ordering::SeqCst) {
            say(
                self.progress,
                format!(
                    "found every --until-known issue after {} case(s): stopping",
                    summary.cases
                ),
            );
        }
        self.progress.set_position(summary.cases);
        self.progress.set_message(format!(
            "{} violation(s), {} query bug(s), {} known, {} permitted, {} fidelity",
            summary.violations,
            summary.query_bugs,
            summary.known_violations,
            summary.permitted,
            summary.fidelity
        ));
        Ok(())
    }
}
