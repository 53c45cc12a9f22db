//! Bounded work: deadlines, and the pace that gives up early on work that cannot meet one (the
//! candidate routings, [`super::DfssspOptions::deadline`]).

use std::time::{Duration, Instant};

use super::DfssspError;

/// [`DfssspError::Stopped`] when past `deadline` (`start`: when the work began).
pub(crate) fn past_deadline(deadline: Option<Instant>, start: Instant) -> Result<(), DfssspError> {
    match deadline {
        Some(d) if Instant::now() > d => Err(DfssspError::Stopped {
            after: start.elapsed(),
            projected: None,
        }),
        _ => Ok(()),
    }
}

/// Steps of work bounded by a deadline: stopped when past it, and, once [`Pace::SAMPLE`] of the
/// steps are done, as soon as their pace projects the rest past it, so that work which cannot
/// finish in time is given up early rather than at the deadline.
pub(crate) struct Pace {
    deadline: Option<Instant>,
    /// When the work began (said in the error), and when its steps began (the pace).
    begun: Instant,
    steps_begun: Instant,
    total: usize,
    done: usize,
}

impl Pace {
    /// The share of the steps (1/16) after which their pace is trusted.
    const SAMPLE: usize = 16;

    /// `total` steps begin now, of work begun at `begun`.
    pub(crate) fn new(deadline: Option<Instant>, begun: Instant, total: usize) -> Self {
        Pace {
            deadline,
            begun,
            steps_begun: Instant::now(),
            total,
            done: 0,
        }
    }

    /// Before the next step: [`DfssspError::Stopped`] when past the deadline or projected past it.
    pub(crate) fn step(&mut self) -> Result<(), DfssspError> {
        let Some(deadline) = self.deadline else {
            return Ok(());
        };
        let now = Instant::now();
        let after = now.duration_since(self.begun);
        let mut projected = None;
        if self.done > 0 && self.done * Self::SAMPLE >= self.total {
            let steps = now.duration_since(self.steps_begun).as_secs_f64();
            let all = steps * self.total as f64 / self.done as f64;
            // (A projection beyond what a Duration holds is past any deadline.)
            let finish = Duration::try_from_secs_f64(all)
                .ok()
                .and_then(|d| self.steps_begun.checked_add(d));
            projected = match finish {
                Some(f) if f <= deadline => None,
                Some(f) => Some(f.duration_since(self.begun)),
                None => Some(Duration::MAX),
            };
        }
        if now > deadline || projected.is_some() {
            return Err(DfssspError::Stopped { after, projected });
        }
        self.done += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Steps that take `each`, `total` of them, under `deadline`: how many ran, and the error.
    fn run(total: usize, each: Duration, deadline: Duration) -> (usize, DfssspError) {
        let begun = Instant::now();
        let mut pace = Pace::new(Some(begun + deadline), begun, total);
        for i in 0..total {
            if let Err(e) = pace.step() {
                return (i, e);
            }
            std::thread::sleep(each);
        }
        panic!("{total} steps ran under a deadline they cannot meet");
    }

    #[test]
    fn work_projected_past_its_deadline_stops_after_a_sixteenth() {
        // 64 steps of 20 ms need 1.28 s; the deadline is 0.5 s: given up after 4 steps.
        let (ran, e) = run(64, Duration::from_millis(20), Duration::from_millis(500));
        assert_eq!(ran, 64 / Pace::SAMPLE, "{e}");
        match e {
            DfssspError::Stopped {
                after,
                projected: Some(p),
            } => {
                assert!(after < Duration::from_millis(400), "{after:?}");
                assert!(p > Duration::from_millis(1000), "{p:?}");
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn work_that_keeps_its_pace_runs_to_the_end() {
        let begun = Instant::now();
        let mut pace = Pace::new(Some(begun + Duration::from_secs(60)), begun, 100);
        for _ in 0..100 {
            pace.step().unwrap();
        }
        // Without a deadline nothing is ever stopped, nor measured.
        let mut free = Pace::new(None, begun, 1);
        free.step().unwrap();
    }
}
