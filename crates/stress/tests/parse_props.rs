//! Property tests of the text formats: flag values and intervals.csv rows
//! round-trip through their printers, and no input text makes a parser
//! panic (they all take untrusted text from the command line or a file).

use proptest::prelude::*;
use varve_stress::output::intervals::IntervalRow;
use varve_stress::spec::parse_duration;
use varve_stress::{Op, OpMix, Population, Rate};

fn op() -> impl Strategy<Value = Op> {
    prop::sample::select(Op::ALL.to_vec())
}

proptest! {
    #[test]
    fn parsers_never_panic(s in "\\PC{0,40}") {
        let _ = Rate::parse(&s);
        let _ = OpMix::parse(&s);
        let _ = Population::parse(&s);
        let _ = parse_duration(&s);
        let _ = IntervalRow::parse(&s);
    }

    #[test]
    fn structured_garbage_never_panics(
        kind in "(seq|uniform|gaussian|fixed|throttle|write|read)",
        a in any::<i128>(),
        b in any::<i128>(),
        sep in "(=|\\.\\.|,|/s|)",
    ) {
        let s = format!("{kind}={a}{sep}{b}");
        let _ = Rate::parse(&s);
        let _ = OpMix::parse(&s);
        let _ = Population::parse(&s);
        let _ = parse_duration(&format!("{a}{sep}"));
    }

    #[test]
    fn populations_round_trip(kind in 0..3u8, lo in any::<u64>(), span in any::<u64>()) {
        let hi = lo.saturating_add(span);
        let p = match kind {
            0 => Population::Seq { lo, hi },
            1 => Population::Uniform { lo, hi },
            _ => Population::Gaussian { lo, hi },
        };
        prop_assert_eq!(Population::parse(&p.to_string()).unwrap(), p);
        let mut rng = rand::thread_rng();
        let i = p.index(span, &mut rng);
        prop_assert!((lo..=hi).contains(&i));
    }

    #[test]
    fn mixes_round_trip(pairs in prop::collection::btree_map(op(), 1..1000u32, 1..5)) {
        let mix = OpMix::new(pairs.clone()).unwrap();
        let back = OpMix::parse(&mix.to_string()).unwrap();
        for (op, w) in pairs {
            prop_assert_eq!(back.weight(op), w);
        }
    }

    #[test]
    fn rates_round_trip(per_s in 0.001f64..1_000_000.0, fixed in any::<bool>()) {
        let r = if fixed { Rate::Fixed { per_s } } else { Rate::Throttle { per_s } };
        prop_assert_eq!(Rate::parse(&r.to_string()).unwrap(), r);
    }

    #[test]
    fn interval_rows_round_trip(
        t_ms in 0u64..10_000_000,
        phase in "[a-z][a-z0-9_]{0,10}",
        op in op(),
        count in any::<u32>(),
        errors in any::<u32>(),
        timeouts in any::<u32>(),
        throughput_ds in 0u64..100_000_000,
        latency in prop::option::of(prop::array::uniform5(0u64..100_000_000)),
    ) {
        let row = IntervalRow {
            t: t_ms as f64 / 1000.0,
            phase,
            op: op.name().to_string(),
            count: u64::from(count),
            errors: u64::from(errors),
            timeouts: u64::from(timeouts),
            throughput: throughput_ds as f64 / 10.0,
            latency_ms: latency.map(|l| l.map(|us| us as f64 / 1000.0)),
        };
        let back = IntervalRow::parse(&row.to_csv()).unwrap();
        prop_assert_eq!(back, row);
    }
}
