//! The `meshcast` command.
//!
//! `meshcast run SCENARIO` runs a scenario in the deterministic simulator
//! and writes its report; `meshcast sweep SCENARIO --vary KEY=V1,V2,...`
//! runs it over a grid of values and plots the figures against them;
//! `meshcast node --config NODE.toml` runs one participant of a real
//! deployment over UDP; `meshcast emu SCENARIO` runs a scenario for real
//! in network namespaces (root).
//!
//! Exit status: 0 on success, 2 for bad input (a scenario or option that
//! cannot be used; nothing is written), 1 when the run could not write its
//! outputs.

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use meshcast::build::{build, end_of};
use meshcast::node::{NodeConfig, run_node, write_node};
use meshcast::overrides::Override;
use meshcast::report::{Summary, results_table, write_all};
use meshcast::scenario::Scenario;
use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "meshcast",
    version,
    about = "Live media among many parties over an overlay"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario in the simulator and write its report.
    Run(RunArgs),
    /// Run a scenario over a grid of values (`--vary KEY=V1,V2,...`) and
    /// plot its figures against the first varied key.
    Sweep(SweepArgs),
    /// Print the central optimum of a conference scenario's sessions (kbit/s
    /// per participant, for each delivery scheme) as JSON.
    Optimum(OptimumArgs),
    /// Run a scenario for real (root, Linux): its underlay as network
    /// namespaces, veth links, kernel shapers and a delay element, one
    /// `meshcast node` process per conference participant, the other flows
    /// on real sockets; write the same report as `run` (docs/emu.md).
    Emu(RunArgs),
    /// Run one participant of a real deployment over UDP until its
    /// duration is over or SIGINT/SIGTERM arrives, then leave the
    /// conference and write what it saw (docs/node.md).
    Node(NodeArgs),
}

#[derive(clap::Args)]
struct NodeArgs {
    /// The node's configuration (TOML; docs/node.md).
    #[arg(long, value_name = "NODE.toml")]
    config: PathBuf,
    /// Where to write summary.json and series.csv [default: out/node-<id>/].
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print summary.json to stdout instead of the table.
    #[arg(long)]
    json: bool,
}

fn node(args: NodeArgs) -> Result<(), Failure> {
    let cfg = NodeConfig::load(&args.config).map_err(bad_input)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(format!("node-{}", cfg.id)));
    let fail = |error| Failure { status: 1, error };
    let summary = run_node(&cfg, |addr| {
        eprintln!(
            "node {} listening on {addr}{}",
            cfg.id,
            match cfg.duration {
                Some(d) => format!(" for {} s", d.as_secs_f64()),
                None => " until SIGINT or SIGTERM".to_owned(),
            }
        );
    })
    .map_err(fail)?;
    write_node(&out, &summary).map_err(fail)?;
    let text = if args.json {
        serde_json::to_string_pretty(&summary).map_err(|e| fail(e.into()))? + "\n"
    } else {
        let mut t = String::from("session  send kbit/s  received here kbit/s\n");
        for f in &summary.flows {
            t += &format!(
                "{:<8} {:>11.1}  {:>20.1}\n",
                f.id, f.total.send_kbps, f.total.recv_kbps_min
            );
        }
        t + &format!("written to {}\n", out.display())
    };
    emit(&text)
}

#[derive(clap::Args)]
struct OptimumArgs {
    /// The scenario file (it needs a [conference] section).
    scenario: PathBuf,
    /// The network state at this time, seconds (events up to it applied,
    /// cross traffic then active taken off the capacity).
    #[arg(long, value_name = "T", default_value_t = 0.0)]
    at: f64,
    /// Override a scenario value (as for `run`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<Override>,
    /// Also print each scheme's link prices at its optimum under
    /// `"prices"`: link (`from->to`) → the multiplier of its capacity in
    /// milliseconds of Celerity's delay price (links priced 0 left out).
    #[arg(long)]
    prices: bool,
}

fn optimum(args: OptimumArgs) -> Result<(), Failure> {
    let sc = Scenario::load(&args.scenario, &args.sets).map_err(bad_input)?;
    if !(args.at.is_finite() && args.at >= 0.0 && args.at <= sc.duration_s) {
        return Err(bad_input(anyhow::anyhow!(
            "--at must be within the run (0..={})",
            sc.duration_s
        )));
    }
    if sc.conference.is_none() {
        return Err(bad_input(anyhow::anyhow!(
            "{}: the scenario has no [conference] section",
            args.scenario.display()
        )));
    }
    let (opt, prices) =
        meshcast::conference::optimum_and_prices_at(&sc, args.at).map_err(|error| Failure {
            status: 1,
            error: error.into(),
        })?;
    let mut value = serde_json::json!(opt);
    if args.prices {
        value["prices"] = serde_json::json!(prices);
    }
    let json = serde_json::to_string_pretty(&value).map_err(|error| Failure {
        status: 1,
        error: error.into(),
    })?;
    emit(&(json + "\n"))
}

#[derive(clap::Args)]
struct SweepArgs {
    /// The scenario file (TOML; docs/scenario-format.md).
    scenario: PathBuf,
    /// A key and its values, e.g. `--vary layered.booster.at_ms=10,50,90`
    /// (repeatable: the grid is the cartesian product; the plots' x axis
    /// is the first key).
    #[arg(long = "vary", value_name = "KEY=V1,V2,...", required = true)]
    vary: Vec<meshcast::sweep::Vary>,
    /// Override a scenario value at every point (as for `run`).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<Override>,
    /// Run every point with this seed instead of the scenario's (vary
    /// `seed` to repeat over seeds).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Where to write the sweep [default: out/<scenario name>-sweep/].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Runs at once [default: the number of cores].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Print sweep.json to stdout instead of the table (no progress).
    #[arg(long)]
    json: bool,
}

fn sweep(args: SweepArgs) -> Result<(), Failure> {
    use meshcast::sweep;
    let scenarios =
        sweep::check(&args.scenario, &args.sets, &args.vary, args.seed).map_err(bad_input)?;
    let name = scenarios
        .first()
        .map(|s| s.name.clone())
        .unwrap_or_default();
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(format!("{name}-sweep")));
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
    });
    if jobs == 0 {
        return Err(bad_input(anyhow::anyhow!("--jobs must be at least 1")));
    }
    let quiet = args.json;
    let keys: Vec<&str> = args.vary.iter().map(|v| v.key.as_str()).collect();
    let progress = |done: usize, total: usize, values: &[String]| {
        if !quiet {
            let point: Vec<String> = keys
                .iter()
                .zip(values)
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            eprintln!("[{done}/{total}] {}", point.join(" "));
        }
    };
    let failed = |error: anyhow::Error| Failure { status: 1, error };
    let result =
        sweep::run(&name, &scenarios, &args.sets, &args.vary, jobs, &progress).map_err(failed)?;
    let plots = sweep::write(&out, &result).map_err(failed)?;
    let text = if args.json {
        serde_json::to_string_pretty(&result).map_err(|e| failed(e.into()))? + "\n"
    } else {
        format!(
            "{}sweep written to {} ({plots} plots)\n",
            sweep::sweep_table(&result),
            out.join("sweep.json").display()
        )
    };
    emit(&text)
}

#[derive(clap::Args)]
struct RunArgs {
    /// The scenario file (TOML; docs/scenario-format.md).
    scenario: PathBuf,
    /// Where to write the report [default: out/<scenario name>/].
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run with this seed instead of the scenario's.
    #[arg(long, value_name = "N")]
    seed: Option<u64>,
    /// Override a scenario value, e.g. `--set link[0].capacity_kbps=500`
    /// (repeatable; applied in order).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<Override>,
    /// Print summary.json to stdout instead of the results table (no
    /// progress bar).
    #[arg(long)]
    json: bool,
    /// Also write control.csv: every conference peer's link rate control,
    /// per session, link and control interval (docs/report-format.md).
    /// `run` only.
    #[arg(long)]
    trace_control: bool,
}

/// A failure and the exit status it earns.
struct Failure {
    status: u8,
    error: anyhow::Error,
}

fn bad_input(e: impl Into<anyhow::Error>) -> Failure {
    Failure {
        status: 2,
        error: e.into(),
    }
}

fn run(args: RunArgs) -> Result<(), Failure> {
    let mut sc = Scenario::load(&args.scenario, &args.sets).map_err(bad_input)?;
    if let Some(seed) = args.seed {
        sc.seed = seed;
    }
    if args.trace_control {
        let Some(c) = sc.conference.as_mut() else {
            return Err(bad_input(anyhow::anyhow!(
                "{}: --trace-control traces a conference's link rate control, and the scenario has no [conference]",
                args.scenario.display()
            )));
        };
        c.params.trace_control = true;
    }
    let mut sim = build(&sc)
        .with_context(|| format!("{}: cannot build the scenario", args.scenario.display()))
        .map_err(bad_input)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(&sc.name));

    let end = end_of(&sc);
    let bar = progress_bar(&args, &sc.name, end, "simulated")?;
    let start = Instant::now();
    sim.run_until(end, &mut |t| {
        if let Some(b) = &bar {
            b.set_position(t.as_nanos() / 1_000_000_000);
        }
    });
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    report(&args, &sc, &sim.into_stats(), wall_s, &out, None)
}

/// Write a run's report into `out` and print its table (or, with
/// `--json`, its summary).
fn report(
    args: &RunArgs,
    sc: &Scenario,
    stats: &meshcast_sim::RunStats,
    wall_s: f64,
    out: &std::path::Path,
    emulation: Option<meshcast::report::EmulationSummary>,
) -> Result<(), Failure> {
    let mut summary = Summary::new(sc, stats, wall_s);
    summary.emulation = emulation;
    write_all(out, &summary, stats).map_err(|error| Failure { status: 1, error })?;
    let text = if args.json {
        summary.to_json()
    } else {
        format!(
            "{}report written to {}\n",
            results_table(&summary),
            out.join("report.html").display()
        )
    };
    emit(&text)
}

/// Write a command's output to stdout. A reader that went away
/// (`meshcast run ... | head`) is no error: the outputs on disk are
/// written already.
fn emit(text: &str) -> Result<(), Failure> {
    use std::io::Write as _;
    match std::io::stdout().lock().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Failure {
            status: 1,
            error: e.into(),
        }),
        _ => Ok(()),
    }
}

/// A progress bar over the run's seconds on a terminal (none with
/// `--json`).
fn progress_bar(
    args: &RunArgs,
    name: &str,
    end: meshcast_core::Time,
    what: &str,
) -> Result<Option<ProgressBar>, Failure> {
    if args.json || !std::io::stderr().is_terminal() {
        return Ok(None);
    }
    let bar = ProgressBar::new(end.as_nanos().div_ceil(1_000_000_000));
    bar.set_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {{msg}} [{{bar:40}}] {{pos}}/{{len}} s {what} ({{elapsed}}, eta {{eta}})"
        ))
        .map_err(|e| Failure {
            status: 1,
            error: e.into(),
        })?
        .progress_chars("=> "),
    );
    bar.set_message(name.to_owned());
    Ok(Some(bar))
}

fn emu(args: RunArgs) -> Result<(), Failure> {
    if args.trace_control {
        return Err(bad_input(anyhow::anyhow!(
            "--trace-control traces the simulator's peers: use `meshcast run`"
        )));
    }
    let mut sc = Scenario::load(&args.scenario, &args.sets).map_err(bad_input)?;
    if let Some(seed) = args.seed {
        sc.seed = seed;
    }
    let file = args.scenario.display().to_string();
    let text = Scenario::read(&args.scenario).map_err(bad_input)?;
    let conference =
        meshcast::emu::conference_table(&file, &text, &args.sets).map_err(bad_input)?;
    meshcast::emu::underlay::check(&sc)
        .with_context(|| format!("{file}: cannot emulate"))
        .map_err(bad_input)?;
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(format!("emu-{}", sc.name)));
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(|e| Failure {
            status: 1,
            error: e.into(),
        })?;
    }
    let bar = progress_bar(&args, &sc.name, end_of(&sc), "run")?;
    let run = meshcast::emu::emulate(&sc, conference.as_ref(), &out, &stop, |t| {
        if let Some(b) = &bar {
            b.set_position(t);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let run = run.map_err(|error| Failure { status: 1, error })?;
    for w in meshcast::emu::warnings(&run.emulation) {
        eprintln!("warning: {w}");
    }
    report(
        &args,
        &sc,
        &run.stats,
        run.wall_s,
        &out,
        Some(run.emulation),
    )
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run(args),
        Command::Sweep(args) => sweep(args),
        Command::Optimum(args) => optimum(args),
        Command::Node(args) => node(args),
        Command::Emu(args) => emu(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("error: {:#}", f.error);
            ExitCode::from(f.status)
        }
    }
}
