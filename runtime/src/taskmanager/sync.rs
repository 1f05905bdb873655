//! Locking a TaskManager's mutexes: a poisoned lock is taken over, not a panic. Below every
//! module of the TaskManager that holds one.

use std::sync::Mutex;

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
