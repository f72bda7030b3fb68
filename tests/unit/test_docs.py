"""README.md and docs/ are checked, not just written: every relative link and anchor resolves, every
`encbench ...` command line in a shell code block (and in inline code) is accepted by the CLI's parser (parsed,
never run), and every command's --help ends with examples that parse and a page that exists."""

from __future__ import annotations

import re
import shlex
import unicodedata
from pathlib import Path

import pytest

from encbench import errors
from encbench.cli import parser as cli_parser
from encbench.cli.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL_BLOCKS = {"bash", "sh", "shell", "console"}
FRONT_PAGE_MAX_LINES = 250

LINK = re.compile(r"(?<!\!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")


def split_markdown(text: str) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(the prose lines, [(info string, lines) of each fenced code block])."""
    prose, blocks, current, fence = [], [], None, ""
    for line in text.splitlines():
        m = FENCE.match(line)
        if current is None and m:
            fence, current = m.group(2), (m.group(3).lower(), [])
        elif current is not None and line.strip().startswith(fence[:3]) and line.strip().strip(fence[0]) == "":
            blocks.append(current)
            current = None
        elif current is not None:
            current[1].append(line)
        else:
            prose.append(line)
    assert current is None, "a code block is not closed"
    return prose, blocks


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, markup and punctuation dropped, spaces as hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text
    text = text.strip().lower().replace("`", "")
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in "-_" or cat[0] in "LN":
            out.append(ch)
        elif ch == " ":
            out.append("-")
    return "".join(out)


def anchors(path: Path) -> set[str]:
    prose, _ = split_markdown(path.read_text())
    seen: dict[str, int] = {}
    out = set()
    for line in prose:
        m = re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        base = slug(m.group(2))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(path: Path) -> list[str]:
    prose, _ = split_markdown(path.read_text())
    text = "\n".join(INLINE_CODE.sub("", line) for line in prose)
    return [m.group(1) for m in LINK.finditer(text)]


def broken_links(path: Path) -> list[str]:
    bad = []
    for target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        file_part, _, anchor = target.partition("#")
        dest = (path.parent / file_part).resolve() if file_part else path
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and (dest.suffix != ".md" or anchor not in anchors(dest)):
            bad.append(f"{target}: no such anchor")
    return bad


# -- command lines ---------------------------------------------------------------------------------------------------

OPERATORS = {"&&", "||", ";", "|", "&", "|&"}
REDIRECTS = {">", ">>", "<", "2>", "2>>", "&>", ">&", "2>&"}
WRAPPERS = {"sudo", "env", "time", "nohup", "exec"}


def shell_lines(block: list[str]) -> list[str]:
    """A block's lines with continuations joined; comments and prompts left to shlex."""
    out, pending = [], ""
    for line in block:
        line = re.sub(r"^\s*[$#]\s+(?=\S)", "", line) if line.lstrip().startswith("$ ") else line
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def encbench_argvs(line: str) -> list[list[str]]:
    """The argument vectors of every `encbench` invocation on one shell line."""
    line = re.sub(r"\$\([^()]*\)", "SUBST", line)  # $(mktemp -d): a value
    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>")
    lexer.commenters = "#"
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unbalanced quote: not a command line we can read
        return []
    argvs, current, skip = [], [], False
    for tok in tokens + [";"]:
        if skip:
            skip = False
            continue
        if tok in REDIRECTS or re.fullmatch(r"\d?[<>]+&?", tok):
            skip = True
            continue
        if tok in OPERATORS:
            argvs.append(current)
            current = []
            continue
        current.append(tok)
    found = []
    for argv in argvs:
        while argv and (re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", argv[0]) or argv[0] in WRAPPERS
                        or (argv[0] == "timeout" and len(argv) > 1)):
            argv = argv[2:] if argv[0] == "timeout" else argv[1:]
        if argv and Path(argv[0]).name == "encbench":
            found.append(argv[1:])
    return found


# inline code in prose often names a command or an option without its arguments (`encbench show`, `encbench
# compare --fail-if`): there, only an unknown command or option, or a value the parser refuses, is an error
FRAGMENT = re.compile(r"the following arguments are required|expected (one|at least one) argument")


def command_lines(path: Path) -> list[tuple[str, list[str], bool]]:
    """(the line, its argv, whether it is a whole command line: a shell block's) of every encbench invocation."""
    prose, blocks = split_markdown(path.read_text())
    out = []
    for info, block in blocks:
        if info in SHELL_BLOCKS:
            for line in shell_lines(block):
                out += [(line.strip(), argv, True) for argv in encbench_argvs(line)]
    for line in prose:  # inline code: `encbench ...`
        for m in INLINE_CODE.finditer(line):
            code = m.group(2).strip()
            if re.match(r"^(\S*/)?encbench\s", code) and not re.search(r"\[|\.\.\.|\bCOMMAND\b", code):
                out += [(code, argv, False) for argv in encbench_argvs(code)]
    return out


def rejected(argv: list[str], whole: bool = True) -> str | None:
    try:
        cli_parser.build_parser().parse_args(argv)
    except errors.UsageError as e:
        return None if not whole and FRAGMENT.search(str(e)) else str(e)
    except SystemExit as e:  # --help, --version
        return None if e.code in (0, None) else f"exit {e.code}"
    return None


# -- the tests -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_and_anchor_resolves(path):
    assert broken_links(path) == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_encbench_command_line_parses(path):
    bad = [(line, why) for line, argv, whole in command_lines(path) if (why := rejected(argv, whole))]
    assert bad == []


def test_the_checks_can_fail(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "other.md").write_text("# A title: `here`\n\n## Twice\n\n## Twice\n")
    page.write_text("[ok](other.md#a-title-here) [dup](other.md#twice-1) [gone](missing.md) [bad](other.md#nope)\n"
                    "```bash\nsudo .venv/bin/encbench run --quick && encbench frobnicate\n"
                    "ENCBENCH_KEY=x encbench run --runs '' -o $(mktemp -d)/a.json  # empty value\n```\n"
                    "```bash\nencbench show\n```\n"
                    "Inline: `encbench show FILE --detail`, `encbench show`, `encbench run --no-such-option`.\n")
    assert broken_links(page) == ["missing.md: no such file", "other.md#nope: no such anchor"]
    verdicts = [(line, rejected(argv, whole) is None) for line, argv, whole in command_lines(page)]
    assert [ok for _, ok in verdicts] == [True, False, False, False, True, True, False], verdicts


def test_the_front_page_is_short_and_every_question_is_one_click_away():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < FRONT_PAGE_MAX_LINES
    targets = set(links(ROOT / "README.md"))
    for page in ("docs/mariadb.md", "docs/in-transit.md", "docs/tls-scan.md", "docs/leak-check.md", "docs/oltp.md",
                 "docs/advise.md", "docs/gate.md", "docs/selftest.md"):
        assert page in targets, page
    listed = set(links(ROOT / "docs" / "README.md"))
    for path in (ROOT / "docs").glob("*.md"):
        assert path.name == "README.md" or path.name in listed, f"docs/README.md does not list {path.name}"


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_help_ends_with_examples_and_a_page(command):
    assert command.examples and (ROOT / "docs" / command.page).is_file()
    for example in command.examples:
        argv = shlex.split(example)
        assert argv[:2] == ["encbench", command.name] and rejected(argv[1:]) is None, example
    sub = cli_parser.build_parser()._subparsers._group_actions[0].choices[command.name]  # noqa: SLF001
    text = sub.format_help()
    assert text.rstrip().endswith(cli_parser.page(command.page)) and command.examples[0] in text


# our own words (a field report's number, an issue's, a folder only our machines have) are not the product's
OUR_WORDS = re.compile(r"\b[Ss]eeds? 0\d\d\b|\bseeds'|shared/seeds|-issue-\d|\b[Ii]ssue \d+\b")


def user_facing_text() -> dict[str, str]:
    """What a user reads besides the pages: section titles of every report, workloads' and engines' descriptions,
    variant keys' descriptions, every command's --help."""
    from encbench.engines import ENGINES
    from encbench.report import render
    from encbench.workloads import WORKLOADS

    out = {f"section {t[0]}": f"{t[0]} {t[1]}" for t in (*render.SECTIONS, *render.DETAIL_SECTIONS)}
    out.update({f"workload {name}": w.description for name, w in WORKLOADS.items()})
    for name, engine in ENGINES.items():
        out[f"engine {name}"] = f"{engine.label} {engine.description}"
        out.update({f"{name} key {k.name}": k.description for k in engine.variant_keys})
    subs = cli_parser.build_parser()._subparsers._group_actions[0].choices  # noqa: SLF001
    out.update({f"{name} --help": sub.format_help() for name, sub in subs.items()})
    return out


def test_no_words_of_our_own_making_in_the_product():
    """issue 30 item 5: no "seed NNN" or "issue N" headings, no link to a folder a clone lacks, anchors named after
    their content."""
    found = [f"{p.relative_to(ROOT)}:{i}: {line.strip()}" for p in PAGES
             for i, line in enumerate(p.read_text().splitlines(), 1) if OUR_WORDS.search(line)]
    found += [f"{where}: {OUR_WORDS.search(text).group(0)}" for where, text in user_facing_text().items()
              if OUR_WORDS.search(text)]
    assert found == []
