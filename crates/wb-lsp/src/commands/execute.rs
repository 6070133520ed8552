//! `wb-lsp dry-run`, `smoke` and `run`: the execution core on the command line.

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use anyhow::Context;

use wb_engine::input::InputPolicy;
use wb_engine::runs::{self, Followed};
use wb_engine::{
    EngineError, Options, Request, RunLimits, RunMode, RunRequest, SessionOptions, Settings, Smoke, SmokeStatus,
};
use wb_manifest::{ModelCatalog, OsFileSystem};

use crate::cli::{BuildArgs, DryRunArgs, RunArgs, RunCommandArgs};
use crate::exit::Exit;
use crate::render;
use crate::supervisor::{self, Start};

/// What the person asked for on the command line.
fn request_of(args: &RunArgs) -> anyhow::Result<Request> {
    let task = match &args.task_file {
        Some(file) => {
            Some(std::fs::read_to_string(file).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", file.display()))?)
        }
        None => args.task.clone(),
    };
    Ok(Request {
        settings: Settings {
            source: args.source.clone(),
            cwd: super::current_dir()?,
            primary: args.dir.clone(),
            runtime: args.runtime.clone(),
            workspaces: args.workspaces.clone(),
            env_files: args.env_files.clone(),
            allow_host_docker: args.allow_host_docker,
            allow_unchecked_gpu: args.allow_unchecked_gpu,
            home: None,
            bare: false,
        },
        env: args.env.clone(),
        task,
    })
}

/// The request, carried out in this process: its environment, and on a terminal, image builds and pulls saying
/// what they are doing (on stderr, so stdout stays data).
fn options(args: &RunArgs) -> anyhow::Result<Options> {
    let context = wb_engine::Context {
        inherited: wb_engine::bindings::process_environment(),
        progress: std::io::stderr()
            .is_terminal()
            .then(|| wb_engine::lifecycle::Progress(std::sync::Arc::new(|message: &str| eprintln!("  {message}")))),
        ..wb_engine::Context::default()
    };
    Ok(Options { request: request_of(args)?, context })
}

/// Ctrl-C sets the returned flag (also given to the runtime through `options`): a remote runtime preparing
/// (a template build, a sandbox being created, a stalled upload) stops at its next step and cleans up, and a
/// run stops its runner. `second_exits`: a second Ctrl-C ends the process at once, for commands whose other
/// steps (a Docker build) do not watch the flag.
fn cancel_on_ctrl_c(options: &mut Options, second_exits: bool) -> Arc<AtomicBool> {
    let cancel = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&cancel);
    let _ = ctrlc::set_handler(move || {
        if flag.swap(true, Ordering::SeqCst) && second_exits {
            Exit::Cancelled.now();
        }
    });
    options.context.cancel = Some(Arc::clone(&cancel));
    cancel
}

/// Prints an engine error as `error: <message>` (with the location for invalid packages).
fn report_error(error: &EngineError) {
    match error {
        EngineError::Invalid { message, path, line, column } => {
            eprintln!("error: {message}\n  --> {}:{line}:{column}", path.display());
        }
        other => eprintln!("error: {other}"),
    }
}

fn write_stdout(text: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes())?;
    stdout.flush()?;
    Ok(())
}

pub fn dry_run(dry_run_args: &DryRunArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let args = &dry_run_args.run;
    let options = options(args)?;
    let report = match wb_engine::dry_run(&OsFileSystem, &options, dry_run_args.stage_dir.as_deref(), catalog) {
        Ok(report) => report,
        Err(error) => {
            report_error(&error);
            eprintln!("error: Workbench dry run failed");
            return Ok(Exit::Failure);
        }
    };
    if args.json || !std::io::stdout().is_terminal() {
        write_stdout(&format!("{}\n", serde_json::to_string_pretty(&report)?))?;
    } else {
        let state = if report.problems.is_empty() { "ready for" } else { "of" };
        let mut text =
            format!("Dry run {state} {} (runner {}, runtime {})\n", report.workbench, report.runner, report.runtime);
        text.push_str(&format!("  Model       {}\n", report.model_route.canonical));
        text.push_str(&format!("  Provider    {}\n", report.model_route.provider));
        text.push_str(&format!("  Workspace   {}\n", report.cwd));
        text.push_str(&format!("  Command     {}\n", report.command.join(" ")));
        text.push_str(&format!("  Skills      {}\n", report.skills.len()));
        text.push_str(&format!("  Workspaces  {}\n", report.workspaces.len()));
        text.push_str(&format!("  Env         {}\n", report.env.join(", ")));
        if let Some(dir) = &report.stage_dir {
            text.push_str(&format!("  Staged in   {dir}\n"));
        }
        for (index, call) in report.runtime_calls.iter().enumerate() {
            let label = if index == 0 { "Would call" } else { "" };
            text.push_str(&format!("  {label:<11} {call}\n"));
        }
        for warning in &report.warnings {
            text.push_str(&format!("  warning: {warning}\n"));
        }
        for problem in &report.problems {
            text.push_str(&format!("  problem: {problem}\n"));
        }
        write_stdout(&text)?;
    }
    // The translation is printed either way; what would stop a run makes the dry run fail.
    for problem in &report.problems {
        eprintln!("error: {problem}");
    }
    Ok(if report.problems.is_empty() { Exit::Success } else { Exit::Failure })
}

pub fn smoke(args: &RunArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let mut options = options(args)?;
    let cancel = cancel_on_ctrl_c(&mut options, true);
    let reports = match wb_engine::smoke(&OsFileSystem, &options, catalog) {
        Ok(reports) => reports,
        Err(error) => {
            report_error(&error);
            return Ok(if cancel.load(Ordering::SeqCst) { Exit::Cancelled } else { Exit::Failure });
        }
    };
    let failed = reports.iter().any(|r| r.status == SmokeStatus::Failed);
    let needs_auth = reports.iter().any(|r| r.status == SmokeStatus::NeedsAuth);
    let terminal = std::io::stdout().is_terminal();
    let mut out = String::new();
    for report in &reports {
        if args.json {
            out.push_str(&serde_json::to_string(report)?);
            out.push('\n');
            continue;
        }
        if report.status == SmokeStatus::Failed {
            // Named, as several packages may be checked at once.
            let message = report.error.as_ref().map(|e| e.message.as_str()).unwrap_or_default();
            eprintln!("error: {}: {message}", super::printable(&report.workbench));
            continue;
        }
        out.push_str(&if terminal { smoke_block(report) } else { smoke_record(report) });
    }
    write_stdout(&out)?;
    Ok(if failed {
        Exit::Failure
    } else if needs_auth {
        Exit::NeedsAuthentication
    } else {
        Exit::Success
    })
}

/// A smoke report for a person at a terminal.
fn smoke_block(report: &Smoke) -> String {
    let mut out = format!("Checking {}\n", super::printable(&report.workbench));
    for line in render::smoke::smoke_lines(report) {
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// A smoke report as one tab-separated line, for scripts.
fn smoke_record(report: &Smoke) -> String {
    let tools: Vec<&str> = report.tools.iter().map(|t| t.name.as_str()).collect();
    let mut record = format!(
        "{}\t{}\trunner={}\ttools={}; auth: {}",
        report.status.as_str(),
        report.workbench,
        render::smoke::runner_path(report),
        if tools.is_empty() { "-".to_owned() } else { tools.join(",") },
        render::smoke::authentication(report)
    );
    let workspaces: Vec<String> = report
        .workspaces
        .iter()
        .filter(|w| w.name != "primary")
        .map(|w| format!("{}={} ({})", w.name, w.path, w.access))
        .collect();
    if !workspaces.is_empty() {
        record.push_str(&format!("; workspaces: {}", workspaces.join(", ")));
    }
    if let Some(engine) = &report.docker_engine {
        record.push_str(&format!("; docker-engine: {engine}"));
    }
    if let Some(requirements) = &report.requirements {
        let mut parts = Vec::new();
        if !requirements.applied.is_empty() {
            parts.push(format!("applied {}", requirements.applied.join(", ")));
        }
        if !requirements.unchecked.is_empty() {
            parts.push(format!("unchecked: {}", requirements.unchecked.join(", ")));
        }
        if !parts.is_empty() {
            record.push_str(&format!("; requirements: {}", parts.join(", ")));
        }
    }
    if !report.disabled_optional_mcps.is_empty() {
        record.push_str(&format!("; optional MCPs disabled: {}", report.disabled_optional_mcps.join(", ")));
    }
    record.push('\n');
    record
}

pub fn run(command: &RunCommandArgs, _catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let args = &command.run;
    if command.detach && (args.json || args.r#final) {
        anyhow::bail!("--detach cannot be combined with --json, --final, or --dry-run");
    }
    if command.session && args.r#final {
        anyhow::bail!("--session cannot be combined with --final (a session's answer is its last turn's)");
    }
    let request = request(command)?;
    let detach = command.detach;
    let supervisor = Arc::new(AtomicU32::new(0));
    let (run_id, mut child) = match start(&request, &supervisor)? {
        Ok(started) => started,
        Err(code) => return Ok(code),
    };
    if detach {
        // From here on Ctrl-C is this command's own: the run goes on.
        supervisor.store(0, Ordering::SeqCst);
        write_stdout(&format!("{run_id}\n"))?;
        eprintln!("run {run_id} started (wb-lsp attach {run_id}, wb-lsp wait {run_id}, wb-lsp kill {run_id})");
        return Ok(Exit::Success);
    }
    let home = supervisor::home()?;
    let (json, final_only) = (args.json, args.r#final);
    if command.session {
        // A session: this command follows its first turn; `send` the next ones.
        return super::followed::follow_turn(&home, &run_id, None, json, None);
    }
    // In a terminal, what the run asks is asked here too (the person may also answer elsewhere).
    let terminal = (!json && !final_only && std::io::stdin().is_terminal() && std::io::stderr().is_terminal())
        .then(super::inline::Terminal::new);
    let followed = runs::follow(&home, &run_id, None, &mut |event| {
        if json || !final_only {
            super::followed::print_logged(event, json);
        }
        if let Some(terminal) = &terminal
            && let Some(request) = event.event().and_then(wb_engine::input::Request::from_event)
        {
            terminal.ask(&home, &run_id, &request);
        }
    })?;
    if followed == Followed::Lost {
        let _ = child.wait();
        eprintln!("error: run {run_id} is lost: its supervisor ended before the run did");
        return Ok(Exit::Failure);
    }
    // The terminal event is out; the supervisor cleans up (a container, a sandbox), then keeps the result.
    child.wait().context("waiting for the run's supervisor")?;
    let result =
        runs::result_of(&home, &run_id).with_context(|| format!("the supervisor of run {run_id} kept no result"))?;
    for warning in &result.warnings {
        eprintln!("warning: {}", super::printable(warning));
    }
    if final_only {
        // Raw for a pipe (the answer is data there); printable on a terminal.
        let text = if std::io::stdout().is_terminal() {
            super::printable_text(&result.final_text)
        } else {
            result.final_text.clone()
        };
        write_stdout(&format!("{text}\n"))?;
    }
    Ok(supervisor::run_exit_code(&result))
}

/// Starts a run's supervisor and waits until the run has started (progress on a terminal's stderr): its id
/// and the supervisor's process, or the exit code of a run that could not start (its error printed). Until the
/// caller stores 0 in `supervisor`, Ctrl-C is passed on to the supervisor: the runner is stopped and
/// run.cancelled is the terminal event; while the runtime prepares, what it is doing stops and the command
/// exits 130.
pub(super) fn start(
    request: &RunRequest,
    supervisor: &Arc<AtomicU32>,
) -> anyhow::Result<Result<(String, std::process::Child), Exit>> {
    let forward = Arc::clone(supervisor);
    let _ = ctrlc::set_handler(move || match forward.load(Ordering::SeqCst) {
        0 => Exit::Cancelled.now(),
        pid => {
            let _ = supervisor::interrupt(pid);
        }
    });
    let starting = supervisor::spawn(request)?;
    supervisor.store(starting.pid(), Ordering::SeqCst);
    let terminal = std::io::stderr().is_terminal();
    let started = starting.wait_started(&mut |message| {
        if terminal {
            eprintln!("  {message}");
        }
    })?;
    Ok(match started {
        Start::Started { run_id, child } => Ok((run_id, child)),
        Start::Failed(failure) => {
            match &failure.location {
                Some((path, line, column)) => {
                    eprintln!("error: {}\n  --> {}:{line}:{column}", failure.message, path.display());
                }
                None => eprintln!("error: {}", failure.message),
            }
            Err(failure.code)
        }
    })
}

/// What the supervisor is handed: the request, the task read, no environment values but `--env`'s, and how the
/// run goes.
fn request(command: &RunCommandArgs) -> anyhow::Result<RunRequest> {
    let input = InputPolicy { no_input: command.no_input, timeout: command.input_timeout };
    let limits = RunLimits { max_cost_usd: command.max_cost, max_duration: command.max_duration, input };
    let session = command.session.then_some(SessionOptions { idle_timeout: command.idle_timeout });
    Ok(RunRequest { request: request_of(&command.run)?, mode: RunMode::start(limits, session), run_id: None })
}

/// `wb-lsp build`: pull or build each package's image; exit 1 when any failed.
pub fn build(args: &BuildArgs, catalog: &ModelCatalog) -> anyhow::Result<Exit> {
    let run_args = RunArgs {
        source: args.source.clone(),
        task: None,
        task_file: None,
        dir: None,
        runtime: args.runtime.clone(),
        workspaces: Vec::new(),
        env: Vec::new(),
        env_files: Vec::new(),
        allow_host_docker: false,
        allow_unchecked_gpu: false,
        json: args.json,
        r#final: false,
    };
    let mut options = options(&run_args)?;
    cancel_on_ctrl_c(&mut options, true);
    let reports = match wb_engine::build(&OsFileSystem, &options, catalog) {
        Ok(reports) => reports,
        Err(error) => {
            report_error(&error);
            return Ok(Exit::Failure);
        }
    };
    let mut out = String::new();
    let mut failed = false;
    for report in &reports {
        if args.json {
            out.push_str(&serde_json::to_string(report)?);
            out.push('\n');
        }
        if let Some(error) = &report.error {
            failed = true;
            eprintln!("error: {error}");
            continue;
        }
        if args.json {
            continue;
        }
        match &report.image {
            Some(image) => {
                let state = match (image.built, image.cached) {
                    (true, true) => "cached, not rebuilt",
                    (true, false) => "built",
                    (false, true) => "present locally",
                    (false, false) => "pulled",
                };
                out.push_str(&format!(
                    "{}\t{}\t{}\t{}\t{state}\n",
                    report.workbench, report.runtime, image.reference, image.id
                ));
            }
            None => out.push_str(&format!("{}\t{}\tno image\n", report.workbench, report.runtime)),
        }
    }
    write_stdout(&out)?;
    Ok(if failed { Exit::Failure } else { Exit::Success })
}

#[cfg(test)]
mod tests {
    use super::{smoke_block, smoke_record};
    use crate::render::smoke::tests::report;

    #[test]
    fn smoke_for_a_terminal_and_for_scripts() {
        assert_eq!(
            smoke_block(&report()),
            "Checking demo\ndemo is ready\ndemo: runner /bin/opencode\ndemo: 1 tool(s)\ndemo: auth ready (openai)\ndemo: requirement cpu 2\ndemo: warning: optional MCP disabled: db\n"
        );
        assert_eq!(
            smoke_record(&report()),
            "ready\tdemo\trunner=/bin/opencode\ttools=sh; auth: ready (openai); workspaces: docs=/d (read-only); requirements: unchecked: disk_gb is not checked on the local runtime; optional MCPs disabled: db\n"
        );
    }
}
