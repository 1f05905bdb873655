//! `conflux-planner`: the planning API (being built).
