#!/usr/bin/env python3
"""Runs a composite GitHub Action (action.yml) locally, the way the GitHub runner does.

    run_action.py ACTION_DIR [--input NAME=VALUE]... [--workspace DIR]

For each step: evaluates `if:` (default `success()`), substitutes `${{ inputs.NAME }}`, `${{ github.action_path }}`
and `${{ runner.temp }}` textually in `run:` and `env:` (composite actions get their inputs that way, not as
INPUT_* variables), and runs the script with `bash --noprofile --norc -eo pipefail FILE` in the workspace, with
GITHUB_PATH, GITHUB_ENV and GITHUB_OUTPUT files whose additions reach the later steps. Once a step fails, the
later steps run only if their condition calls always() or failure(). Exits with the first failing step's status
(0 when all succeed); the steps' output goes to stdout, the runner's own lines to stderr.
Needs PyYAML (pip install pyyaml).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


class ActionError(Exception):
    pass


def tokenize(text):
    tokens = []
    position = 0
    pattern = re.compile(r"\s*(?:(?P<string>'(?:[^']|'')*')|(?P<op>==|!=|&&|\|\||!|\(|\))|(?P<name>[A-Za-z_][\w.-]*(?:\(\))?))")
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = pattern.match(text, position)
        if match is None:
            raise ActionError(f"cannot parse expression {text!r} at {text[position:]!r}")
        position = match.end()
        if match.group("string") is not None:
            tokens.append(("value", match.group("string")[1:-1].replace("''", "'")))
        elif match.group("op") is not None:
            tokens.append(("op", match.group("op")))
        else:
            tokens.append(("name", match.group("name")))
    return tokens


class Evaluator:
    """The part of GitHub's expression language that action.yml may use in `if:`."""

    def __init__(self, context, failed):
        self.context = context
        self.failed = failed
        self.calls_status_function = False

    def evaluate(self, text):
        self.tokens = tokenize(text)
        self.index = 0
        value = self.parse_or()
        if self.index != len(self.tokens):
            raise ActionError(f"unexpected {self.tokens[self.index]} in {text!r}")
        return value

    def peek(self):
        return self.tokens[self.index] if self.index < len(self.tokens) else (None, None)

    def take(self):
        token = self.peek()
        self.index += 1
        return token

    def parse_or(self):
        value = self.parse_and()
        while self.peek() == ("op", "||"):
            self.take()
            right = self.parse_and()
            value = value or right
        return value

    def parse_and(self):
        value = self.parse_comparison()
        while self.peek() == ("op", "&&"):
            self.take()
            right = self.parse_comparison()
            value = value and right
        return value

    def parse_comparison(self):
        value = self.parse_unary()
        while self.peek() in (("op", "=="), ("op", "!=")):
            _, op = self.take()
            right = self.parse_unary()
            # GitHub compares strings case-insensitively.
            equal = str(value).lower() == str(right).lower()
            value = equal if op == "==" else not equal
        return value

    def parse_unary(self):
        kind, token = self.take()
        if (kind, token) == ("op", "!"):
            return not truthy(self.parse_unary())
        if (kind, token) == ("op", "("):
            value = self.parse_or()
            if self.take() != ("op", ")"):
                raise ActionError("missing )")
            return value
        if kind == "value":
            return token
        if kind == "name":
            if token in ("always()", "success()", "failure()", "cancelled()"):
                self.calls_status_function = True
                return {"always()": True, "success()": not self.failed, "failure()": self.failed, "cancelled()": False}[token]
            if token in ("true", "false"):
                return token == "true"
            return lookup(self.context, token)
        raise ActionError(f"unexpected token {token!r}")


def truthy(value):
    return value not in (False, "", None, 0)


def lookup(context, name):
    if name not in context:
        raise ActionError(f"unknown expression {name!r} (known: {', '.join(sorted(context))})")
    return context[name]


def substitute(text, context):
    return EXPRESSION.sub(lambda match: str(lookup(context, match.group(1))), text)


def read_lines(path):
    with open(path, encoding="utf-8") as handle:
        lines = [line.rstrip("\n") for line in handle if line.strip()]
    open(path, "w").close()
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action_dir")
    parser.add_argument("--input", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--workspace", default=os.getcwd())
    args = parser.parse_args()

    action_dir = os.path.abspath(args.action_dir)
    with open(os.path.join(action_dir, "action.yml"), encoding="utf-8") as handle:
        action = yaml.safe_load(handle)
    if action.get("runs", {}).get("using") != "composite":
        raise ActionError("not a composite action")

    declared = action.get("inputs") or {}
    inputs = {name: str(spec.get("default", "")) for name, spec in declared.items()}
    for assignment in args.input:
        name, separator, value = assignment.partition("=")
        if not separator:
            raise ActionError(f"--input {assignment!r}: expected NAME=VALUE")
        if name not in declared:
            raise ActionError(f"input {name!r} is not declared in action.yml")
        inputs[name] = value

    runner_dir = tempfile.mkdtemp(prefix="wb-action-runner-")
    runner_temp = os.path.join(runner_dir, "temp")
    os.makedirs(runner_temp)
    files = {}
    for variable in ("GITHUB_PATH", "GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY"):
        files[variable] = os.path.join(runner_dir, variable.lower())
        open(files[variable], "w").close()

    context = {f"inputs.{name}": value for name, value in inputs.items()}
    context["github.action_path"] = action_dir
    context["github.workspace"] = os.path.abspath(args.workspace)
    context["runner.temp"] = runner_temp

    environment = dict(os.environ)
    environment.update(files)
    environment.update(
        {
            "GITHUB_ACTIONS": "true",
            "CI": "true",
            "GITHUB_ACTION_PATH": action_dir,
            "GITHUB_WORKSPACE": os.path.abspath(args.workspace),
            "RUNNER_TEMP": runner_temp,
        }
    )
    extra_path = []
    first_failure = 0

    for number, step in enumerate(action["runs"]["steps"], start=1):
        name = step.get("name", f"step {number}")
        if "run" not in step:
            raise ActionError(f"{name}: only `run` steps can be run locally")
        if step.get("shell") != "bash":
            raise ActionError(f"{name}: composite run steps need `shell: bash` here")
        evaluator = Evaluator(context, first_failure != 0)
        condition = EXPRESSION.sub(lambda match: match.group(1), str(step.get("if", "success()")))
        value = evaluator.evaluate(condition)
        if not evaluator.calls_status_function:
            value = truthy(value) and first_failure == 0
        if not truthy(value):
            print(f"[runner] skip: {name} (if: {step.get('if', 'success()')})", file=sys.stderr)
            continue

        step_environment = dict(environment)
        if extra_path:
            step_environment["PATH"] = os.pathsep.join(list(reversed(extra_path)) + [environment.get("PATH", "")])
        for key, raw in (step.get("env") or {}).items():
            step_environment[key] = substitute(str(raw), context)
        script = os.path.join(runner_dir, f"step-{number}.sh")
        with open(script, "w", encoding="utf-8") as handle:
            handle.write(substitute(step["run"], context))

        print(f"[runner] run: {name}", file=sys.stderr)
        sys.stdout.flush()
        status = subprocess.call(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", script],
            cwd=args.workspace,
            env=step_environment,
        )
        print(f"[runner] {name}: exit status {status}", file=sys.stderr)
        extra_path.extend(read_lines(files["GITHUB_PATH"]))
        for line in read_lines(files["GITHUB_ENV"]):
            key, _, value = line.partition("=")
            environment[key] = value
        if status != 0 and first_failure == 0:
            first_failure = status

    return first_failure


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ActionError as error:
        print(f"run_action.py: {error}", file=sys.stderr)
        sys.exit(125)
