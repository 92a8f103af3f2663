use super::*;

const GOOD: &str = r#"name = "bottleneck"
duration_s = 60
seed = 1
[[node]]
id = "A"
kind = "host"
[[node]]
id = "E"
kind = "router"
[[node]]
id = "C"
kind = "host"
[[link]]
from = "A"
to = "E"
capacity_kbps = 100000
delay_ms = 0.0
queue_packets = 50
loss = 0.0
both_ways = true
[[link]]
from = "E"
to = "C"
capacity_kbps = 1000
[[event]]
at_s = 10
kind = "cbr"
from = "A"
to = "C"
rate_kbps = 500
packet_bytes = 1000
until_s = 50
[[event]]
at_s = 20
kind = "link_down"
from = "E"
to = "C"
[[report.window]]
from_s = 20
to_s = 50
"#;

fn err(text: &str) -> ScenarioError {
    Scenario::parse("s.toml", text, &[]).unwrap_err()
}

/// Replace the first occurrence of `from` in GOOD.
fn bad(from: &str, to: &str) -> ScenarioError {
    assert!(GOOD.contains(from), "{from}");
    err(&GOOD.replacen(from, to, 1))
}

#[test]
fn the_core_schema_parses() {
    let sc = Scenario::parse("s.toml", GOOD, &[]).unwrap();
    assert_eq!(sc.name, "bottleneck");
    assert_eq!(sc.nodes.len(), 3);
    assert_eq!(
        sc.links[1].params.queue.packets,
        Some(DEFAULT_QUEUE_PACKETS)
    );
    assert!(sc.links[1].both_ways);
    assert_eq!(sc.windows, vec![(20, 50)]);
    match &sc.events[0].kind {
        EventKind::Traffic { id, until_s, .. } => {
            assert_eq!(id, "cbr:A->C");
            assert_eq!(*until_s, 50.0);
        }
        k => panic!("{k:?}"),
    }
}

#[test]
fn errors_name_file_line_and_field() {
    let e = bad("capacity_kbps = 1000\n", "capacity_kbps = -5\n");
    assert_eq!(
        (e.file.as_str(), e.line, e.field.as_str()),
        ("s.toml", 24, "link[1].capacity_kbps")
    );
    assert!(
        e.to_string()
            .starts_with("s.toml:24:17: link[1].capacity_kbps: must be a positive")
    );

    let e = bad("delay_ms = 0.0", "delay = 0.0");
    assert_eq!(e.line, 17);
    assert!(e.message.contains("unknown field `delay`"), "{e}");
    assert_eq!(e.field, "delay");

    let e = bad("to = \"C\"\nrate_kbps", "to = \"Z\"\nrate_kbps");
    assert_eq!((e.line, e.field.as_str()), (29, "event[0].to"));
    assert!(e.message.contains("unknown node \"Z\""));

    let e = bad("to = \"C\"\ncapacity_kbps", "to = \"E\"\ncapacity_kbps");
    assert_eq!((e.line, e.field.as_str()), (23, "link[1].to"));
    assert!(e.message.contains("itself"));

    let e = bad("at_s = 20", "at_s = 60");
    assert_eq!((e.line, e.field.as_str()), (34, "event[1].at_s"));
    assert!(e.message.contains("outside the run"));

    let e = bad("until_s = 50", "until_s = 61");
    assert_eq!((e.line, e.field.as_str()), (32, "event[0].until_s"));

    let e = bad("capacity_kbps = 1000\n", "capacity_kbps = \"fast\"\n");
    assert_eq!((e.line, e.field.as_str()), (24, "capacity_kbps"));

    let e = bad("kind = \"link_down\"", "kind = \"explode\"");
    assert!(e.message.contains("unknown event kind"));

    let e = bad(
        "from = \"E\"\nto = \"C\"\n[[report",
        "from = \"C\"\nto = \"A\"\n[[report",
    );
    assert!(e.message.contains("no link C -> A"), "{e}");

    let e = bad("to_s = 50", "to_s = 20");
    assert_eq!(e.field, "report.window[0].to_s");

    let e = bad("rate_kbps = 500", "rate_kbps = 500\nnode = \"A\"");
    assert!(e.message.contains("does not apply"), "{e}");
    assert_eq!(e.line, 31);

    let e = err("name = \"x\"\nduration_s = [");
    assert_eq!((e.line, e.column), (2, 15));

    let e = bad(
        "from = \"E\"\nto = \"C\"\ncapacity",
        "from = \"E\"\nto = \"A\"\ncapacity",
    );
    assert!(e.message.contains("already declared"), "{e}");
}

#[test]
fn overrides_apply_and_are_blamed() {
    let sets: Vec<Override> = [
        "duration_s=100",
        "event[0].rate_kbps=800",
        "link[1].loss=0.25",
        "seed=9",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect();
    let sc = Scenario::parse("s.toml", GOOD, &sets).unwrap();
    assert_eq!((sc.duration_s, sc.seed), (100.0, 9));
    assert_eq!(sc.links[1].params.loss, 0.25);
    match &sc.events[0].kind {
        EventKind::Traffic { rate, .. } => assert_eq!(*rate, Rate::from_kbps(800)),
        k => panic!("{k:?}"),
    }
    let e = Scenario::parse("s.toml", GOOD, &["link[1].loss=2".parse().unwrap()]).unwrap_err();
    assert_eq!(e.set_by.as_deref(), Some("link[1].loss=2"));
    assert!(
        e.to_string().contains("(value from --set link[1].loss=2)"),
        "{e}"
    );
    let e = Scenario::parse("s.toml", GOOD, &["link[1].speed=2".parse().unwrap()]).unwrap_err();
    assert!(e.message.contains("unknown field `speed`"), "{e}");
    // Lines below an added key keep their numbers in messages.
    let sets = ["link[0].queue_bytes=9000".parse().unwrap()];
    let e = Scenario::parse(
        "s.toml",
        &GOOD.replace("until_s = 50", "until_s = 70"),
        &sets,
    )
    .unwrap_err();
    assert_eq!((e.line, e.field.as_str()), (32, "event[0].until_s"));
}
