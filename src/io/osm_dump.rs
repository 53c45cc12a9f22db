//! OpenSM dump files (in progress).
