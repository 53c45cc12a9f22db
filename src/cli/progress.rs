//! Progress indication on standard error for the long steps (routing, all-pairs metrics, Λ, the
//! deadlock check). The core's computations take no callbacks, so each step shows a spinner with
//! its elapsed time rather than a percentage. Hidden when standard error is not a terminal
//! (indicatif's stderr target draws nothing then) or with `--quiet`.

use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub struct Progress {
    quiet: bool,
}

impl Progress {
    pub fn new(quiet: bool) -> Self {
        Progress { quiet }
    }

    /// Never shown (steps run inside a step that shows its own progress).
    pub fn quiet() -> Self {
        Progress { quiet: true }
    }

    /// Runs `f` under a spinner showing `msg`; returns its result and how long it took.
    pub fn stage<T>(&self, msg: &str, f: impl FnOnce() -> T) -> (T, Duration) {
        let target = if self.quiet {
            ProgressDrawTarget::hidden()
        } else {
            ProgressDrawTarget::stderr()
        };
        let bar = ProgressBar::with_draw_target(None, target);
        bar.set_style(
            ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(msg.to_string());
        // The ticker thread keeps the spinner moving while `f` keeps every core busy.
        bar.enable_steady_tick(Duration::from_millis(120));
        let t = Instant::now();
        let out = f();
        let took = t.elapsed();
        bar.finish_and_clear();
        (out, took)
    }
}
