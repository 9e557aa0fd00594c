//! TimeWindow tests: window assignment per unit, newest-window STCS, older windows.

use super::twcs::{TimeUnit, TimeWindow, TimeWindowOptions};
use super::{CommonOptions, Reason, SstableView, Strategy, Task};

/// 2024-01-01T10:33:20Z in seconds.
const T: i64 = 1_704_105_200;

fn opts(unit: TimeUnit, size: u32) -> TimeWindowOptions {
    TimeWindowOptions {
        compaction_window_unit: unit,
        compaction_window_size: size,
        ..TimeWindowOptions::default()
    }
}

#[test]
fn windows_by_unit_and_size() {
    let micros = T * 1_000_000;
    assert_eq!(
        opts(TimeUnit::Minutes, 1).window_start_ms(micros),
        (T - 20) * 1000
    );
    assert_eq!(
        opts(TimeUnit::Minutes, 5).window_start_ms(micros),
        (T - 200) * 1000
    );
    assert_eq!(
        opts(TimeUnit::Hours, 1).window_start_ms(micros),
        (T - 2000) * 1000
    );
    assert_eq!(
        opts(TimeUnit::Hours, 6).window_start_ms(micros),
        (T - 2000 - 3600 * 4) * 1000
    );
    assert_eq!(
        opts(TimeUnit::Days, 1).window_start_ms(micros),
        1_704_067_200_000
    );
    let millis = TimeWindowOptions {
        timestamp_resolution: TimeUnit::Milliseconds,
        ..opts(TimeUnit::Hours, 1)
    };
    assert_eq!(millis.window_start_ms(T * 1000), (T - 2000) * 1000);
    // The last microsecond of a window still belongs to it.
    let hour = opts(TimeUnit::Hours, 1);
    let start = (T - 2000) * 1_000_000;
    assert_eq!(
        hour.window_start_ms(start + 3_600_000_000 - 1),
        (T - 2000) * 1000
    );
    assert_eq!(
        hour.window_start_ms(start + 3_600_000_000),
        (T - 2000 + 3600) * 1000
    );
}

fn in_hour(id: u64, hour: i64, size: u64) -> SstableView {
    let ts = (T + hour * 3600) * 1_000_000;
    SstableView {
        min_timestamp: ts,
        max_timestamp: ts,
        ..SstableView::new(id, size)
    }
}

fn twcs() -> TimeWindow {
    TimeWindow::new(opts(TimeUnit::Hours, 1), CommonOptions::default())
}

#[test]
fn newest_window_needs_min_threshold_older_windows_need_two() {
    let newest: Vec<SstableView> = (1..=3).map(|i| in_hour(i, 5, 10)).collect();
    assert_eq!(
        twcs().next_task(&newest, 0, 0),
        None,
        "3 < min_threshold in the newest window"
    );
    let mut t = newest.clone();
    t.push(in_hour(4, 5, 10));
    match twcs().next_task(&t, 0, 0) {
        Some(Task::Compact {
            inputs,
            reason: Reason::SizeTiered,
            ..
        }) => assert_eq!(inputs, vec![1, 2, 3, 4]),
        other => panic!("{other:?}"),
    }
    let mut t = newest;
    t.push(in_hour(10, 2, 10));
    t.push(in_hour(11, 2, 10));
    match twcs().next_task(&t, 0, 0) {
        Some(Task::Compact {
            inputs,
            reason: Reason::TimeWindow { window_start_ms },
            ..
        }) => {
            assert_eq!(inputs, vec![10, 11]);
            assert_eq!(window_start_ms, (T - 2000 + 2 * 3600) * 1000);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(twcs().pending_tasks(&t), 1);
}

#[test]
fn older_window_is_trimmed_to_max_threshold_smallest() {
    let mut t: Vec<SstableView> = (1..=40).map(|i| in_hour(i, 1, 1000 - i)).collect();
    t.push(in_hour(100, 9, 1)); // a newer window exists
    match twcs().next_task(&t, 0, 0) {
        Some(Task::Compact { inputs, .. }) => assert_eq!(inputs, (9..=40).collect::<Vec<u64>>()),
        other => panic!("{other:?}"),
    }
    assert_eq!(twcs().pending_tasks(&t), 2, "ceil(40 / 32)");
}

#[test]
fn expired_check_runs_at_most_every_frequency() {
    let mut t = vec![in_hour(1, 1, 10)];
    t[0].max_local_deletion_time = 5;
    let mut s = twcs();
    assert_eq!(
        s.next_task(&t, 1000, 10),
        Some(Task::DropExpired { inputs: vec![1] })
    );
    assert_eq!(s.next_task(&t, 1599, 10), None, "checked 599 s ago");
    assert_eq!(
        s.next_task(&t, 1600, 10),
        Some(Task::DropExpired { inputs: vec![1] })
    );
}
