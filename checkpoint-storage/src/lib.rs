//! `conflux-checkpoint`: checkpoint storage (being built).
