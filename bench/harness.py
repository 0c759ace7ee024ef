"""``python -m bench``: run the benchmark sections, print their tables, write the results JSON.

Sections are registered in ``SECTIONS`` (name -> ``run(config, results_so_far) -> dict``), in the
order they run; a later section may read an earlier one's results (scale reads tokens and latency).
Every section's result has a ``status``: ``ok``, ``skipped`` (registered, not implemented yet) or
``not selected`` (left out by ``--only``).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import gateway, latency, manifest, proxy, scale, targets, tokens
from bench import search as search_quality
from bench.common import CATALOGS, ROOT, Config, machine

Section = Callable[[Config, dict[str, Any]], dict[str, Any]]

DEFAULT_JSON = ROOT / "bench" / "results.json"


def skipped(reason: str) -> Section:
    """A registered section that is not implemented yet."""

    def run(cfg: Config, results: dict[str, Any]) -> dict[str, Any]:
        return {"status": "skipped", "reason": reason}

    return run


SECTIONS: dict[str, Section] = {
    "tokens": tokens.run,
    "latency": latency.run,
    "scale": scale.run,
    # Later sections: replace the placeholder with the module's run(cfg, results) -> dict, and add
    # its render(section) -> str to RENDERERS.
    "proxy": proxy.run,
    "gateway": gateway.run,
    "search": search_quality.section,
    "manifest": manifest.run,
}

RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "tokens": tokens.render,
    "latency": latency.render,
    "scale": scale.render,
    "proxy": proxy.render,
    "gateway": gateway.render,
    "search": search_quality.render_section,
    "manifest": manifest.render,
}


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description="lazymcp benchmarks (see bench/README.md)")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, sizes up to 1,000, minimal stdio (CI)")
    parser.add_argument(
        "--json", type=Path, default=DEFAULT_JSON, metavar="FILE", help="results file (default: %(default)s)"
    )
    parser.add_argument(
        "--only",
        nargs="+",
        choices=list(SECTIONS),
        metavar="SECTION",
        help=f"run only these sections: {', '.join(SECTIONS)}",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    cfg = Config.make(args.quick)
    selected = set(args.only or SECTIONS)
    meta = machine()
    run_kind = "quick" if cfg.quick else "full"
    print(f"lazymcp bench · {run_kind} run · {meta['date']} · {meta['cpu']} · nproc {meta['nproc']}", end="")
    print(f" · Python {meta['python']}")
    print(f"real catalogs: {CATALOGS if CATALOGS.is_dir() else 'absent (' + str(CATALOGS) + '), skipped'}", flush=True)
    started = time.perf_counter()
    results: dict[str, Any] = {}
    for name, run in SECTIONS.items():
        if name not in selected:
            results[name] = {"status": "not selected"}
            continue
        print(f"\n=== {name} ===", flush=True)
        t0 = time.perf_counter()
        section = run(cfg, results)
        section["seconds"] = round(time.perf_counter() - t0, 2)
        results[name] = section
        render = RENDERERS.get(name)
        if section["status"] == "ok" and render is not None:
            print(render(section))
        else:
            print(f"{section['status']}: {section.get('reason', '')}")
        print(f"({name}: {section['seconds']} s)", flush=True)
    evaluated = targets.evaluate(results)
    print("\n" + targets.render(evaluated))
    meta["seconds"] = round(time.perf_counter() - started, 2)
    meta["quick"] = cfg.quick
    meta["argv"] = list(sys.argv[1:] if argv is None else argv)
    out = {"meta": meta, "config": asdict(cfg), "sections": results, "targets": evaluated}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    print(f"\nwrote {args.json} · total {meta['seconds']} s")
    return 0
