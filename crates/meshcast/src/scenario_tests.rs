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

/// GOOD plus the parts the MSB scenarios use: a RED link, TCP and TFRC
/// flows, periodic drops and a layered stream through a booster.
fn msb_text(extra: &str) -> String {
    GOOD.replace("both_ways = true\n", "both_ways = true\nred = true\n")
        + r#"[[node]]
id = "B"
kind = "host"
[[link]]
from = "B"
to = "E"
capacity_kbps = 1000
[[event]]
at_s = 1
kind = "tcp"
from = "A"
to = "C"
count = 3
start_gap_ms = 500
[[event]]
at_s = 2
kind = "tfrc"
id = "t"
from = "C"
to = "A"
rate_kbps = 300
packet_bytes = 500
[[event]]
at_s = 3
kind = "drop_every"
from = "C"
to = "E"
every = 4
[layered]
source = "A"
receiver = "C"
change_s = 30
[layered.booster]
node = "B"
at_ms = 30
path_ms = 100
before = [["A", "E"]]
after = [["E", "C"]]
"# + extra
}

fn msb(extra: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse("s.toml", &msb_text(extra), &[])
}

fn msb_with(sets: &[&str]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<Override> = sets.iter().map(|s| s.parse().unwrap()).collect();
    Scenario::parse("s.toml", &msb_text(""), &sets)
}

#[test]
fn the_msb_parts_parse() {
    let sc = msb("").unwrap();
    assert_eq!(sc.links[0].params.red, Some(meshcast_sim::Red::default()));
    assert_eq!(sc.links[1].params.red, None);
    // at_ms set the delays of the links before and after the booster.
    assert_eq!(sc.links[0].params.delay, Duration::from_millis(30));
    assert_eq!(sc.links[1].params.delay, Duration::from_millis(70));
    let tcp: Vec<(f64, &str)> = sc
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Tcp { id, .. } => Some((e.at_s, id.as_str())),
            _ => None,
        })
        .collect();
    assert_eq!(
        tcp,
        [(1.0, "tcp:A->C"), (1.5, "tcp:A->C#2"), (2.0, "tcp:A->C#3")]
    );
    assert!(sc.events.iter().any(|e| e.kind
        == EventKind::Tfrc {
            id: "t".into(),
            from: "C".into(),
            to: "A".into(),
            packet_bytes: 500,
            rate: Some(Rate::from_kbps(300)),
            until_s: 60.0,
        }));
    // C -> E is the reverse direction of the declared link E - C.
    assert!(sc.events.iter().any(|e| e.kind
        == EventKind::DropEvery {
            link: 1,
            reverse: true,
            every: Some(4),
        }));
    let l = sc.layered.as_ref().unwrap();
    assert_eq!(
        (l.id.as_str(), l.booster.as_deref(), l.change_s),
        ("layered", Some("B"), Some(30.0))
    );
    assert_eq!(l.stream, meshcast_proto::msb::LayeredConfig::default());

    let off = Scenario::parse(
        "s.toml",
        &GOOD.replace(
            "both_ways = true\n",
            "both_ways = true\nred = { max_p = 0.2 }\n",
        ),
        &[],
    )
    .unwrap();
    assert_eq!(off.links[0].params.red.unwrap().max_p, 0.2);
}

#[test]
fn bad_msb_parts_are_located() {
    let bad_red = Scenario::parse(
        "s.toml",
        &GOOD.replace(
            "both_ways = true\n",
            "both_ways = true\nred = { min_th = 20 }\n",
        ),
        &[],
    )
    .unwrap_err();
    assert_eq!(bad_red.field, "link[0].red");
    for (set, field, words) in [
        (
            "layered.booster.at_ms=101",
            "layered.booster.at_ms",
            "0..=path_ms",
        ),
        ("layered.booster.node=A", "layered.booster.node", "neither"),
        ("layered.receiver=A", "layered.receiver", "differ"),
        ("layered.change_s=61", "layered.change_s", "stream's time"),
        ("layered.layers=0", "layered.layers", "1..=255"),
        ("layered.beta=2", "layered.beta", "0..=1"),
        ("event[4].every=1", "event[4].every", ">= 2"),
        ("event[2].count=0", "event[2].count", "1..=10000"),
        (
            "event[2].start_gap_ms=30000",
            "event[2].start_gap_ms",
            "after until_s",
        ),
        (
            "event[2].rate_kbps=100",
            "event[2].rate_kbps",
            "does not apply",
        ),
        (
            "event[3].packet_bytes=10",
            "event[3].packet_bytes",
            "must be within",
        ),
    ] {
        let err = msb_with(&[set]).unwrap_err();
        assert_eq!(err.field, field, "{set}: {err}");
        assert!(err.message.contains(words), "{set}: {err}");
        assert_eq!(err.set_by.as_deref(), Some(set));
    }
    let twice = msb_text("").replace(r#"after = [["E", "C"]]"#, r#"after = [["E", "A"]]"#);
    let err = Scenario::parse("s.toml", &twice, &[]).unwrap_err();
    assert_eq!(err.field, "layered.booster.after[0]");
    assert!(err.message.contains("already listed in before"), "{err}");
    let err = msb_with(&["layered.booster.path_ms=0"]).unwrap_err();
    assert_eq!(err.field, "layered.booster.path_ms");
    // Turning the booster off keeps its placement: the same path end to end.
    let sc = msb_with(&["layered.booster.enabled=false"]).unwrap();
    assert_eq!(sc.layered.unwrap().booster, None);
    assert_eq!(sc.links[0].params.delay, Duration::from_millis(30));
}

#[test]
fn a_message_names_a_place_only_where_there_is_one() {
    let e = bad("capacity_kbps = 1000\n", "capacity_kbps = -1\n");
    let shown = e.to_string();
    assert!(shown.starts_with(&format!("s.toml:{}:", e.line)), "{shown}");
    assert!(e.line > 0, "{shown}");
    let e = Scenario::parse("s.toml", GOOD, &["link[1].loss=2".parse().unwrap()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "s.toml: link[1].loss: {} (value from --set link[1].loss=2)",
            e.message
        )
    );
    let e = Scenario::load(Path::new("/nonexistent/s.toml"), &[]).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("/nonexistent/s.toml: cannot read: "),
        "{e}"
    );
}
