"""The `nxe` command: what a C program needs to build against this installation, the op
reference, the README's example, what the CPU offers, which models there are and what one
holds (nxe/cli_models.py), upscaling images and video (nxe/upscale.py), and the engine's
server, its config file and the running server's models (nxe/cli_serve.py).

Only what --help needs is imported here; each command imports what it uses when it runs
(benchmarks/startup.py measures the start-up)."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import runpy
import sys
from typing import Any

from . import cli_models, cli_serve
from ._binding import INCLUDE_DIR, LIB_DIR, PACKAGE_DIR, PKGCONFIG_DIR


def _config(args: argparse.Namespace) -> int:
    flags = args.prefix or args.pkgconfig_path or args.cflags or args.libs
    if args.action is not None:
        if flags:
            print(f"nxe config {args.action}: the build flags (--cflags, --libs, "
                  "--pkgconfig-path, --prefix) are a command of their own", file=sys.stderr)
            return 2
        from .cli_serve import config_command

        return config_command(args)
    if args.config is not None:
        print("nxe config: --config goes with show or check", file=sys.stderr)
        return 2
    words = []
    if args.prefix:
        words.append(str(PACKAGE_DIR))
    if args.pkgconfig_path:
        words.append(str(PKGCONFIG_DIR))
    if args.cflags:
        words.append(f"-I{INCLUDE_DIR}")
    if args.libs:
        # The rpath lets the program find libnxe.so here without LD_LIBRARY_PATH.
        words.append(f"-L{LIB_DIR} -Wl,-rpath,{LIB_DIR} -lnxe")
    if not words:
        print("nxe config: give show or check (the engine's config file), or at least one of "
              "--cflags, --libs, --pkgconfig-path, --prefix", file=sys.stderr)
        return 2
    print(" ".join(words))
    return 0


def _ops(args: argparse.Namespace) -> int:
    from . import registry

    if args.markdown:
        sys.stdout.write(registry.markdown())
        return 0
    for entry in registry.ops():
        print(f"{entry['name']:<24} {entry['summary']}")
    return 0


def _example(args: argparse.Namespace) -> int:
    runpy.run_module("nxe.example", run_name="__main__")
    return 0


def _info(args: argparse.Namespace) -> int:
    from . import api_version, cpu_info, devices, version

    cpu = cpu_info()
    report = {"version": version(), "api_version": "{}.{}".format(*api_version()), **cpu,
              "devices": [device.as_dict() for device in devices()]}
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
        return 0
    print(f"nxe:          {report['version']}")
    print(f"API:          {report['api_version']}")
    print(f"CPU features: {' '.join(cpu['features']) or '(none)'}")
    print(f"ISA:          {cpu['isa']}")
    print(f"why:          {cpu['reason']}")
    print("kernels:      " + ", ".join(f"{precision} {name}"
                                       for precision, name in cpu["kernels"].items()))
    print("devices:")
    for device in report["devices"]:
        where = (f"{device['num_cores']} cores ({_core_list(device['cores'])}), "
                 f"isa {device['isa']}" if device["kind"] == "cpu" else "remote worker")
        print(f"  {device['name']:<20} {where}")
    return 0


def _core_list(cores: list[int]) -> str:
    """"0-3,6" for [0, 1, 2, 3, 6]."""
    parts: list[list[int]] = []
    for core in cores:
        if parts and parts[-1][1] == core - 1:
            parts[-1][1] = core
        else:
            parts.append([core, core])
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in parts)


def _worker(args: argparse.Namespace) -> int:
    try:
        from .remote import worker
    except ImportError as error:
        print(f"nxe worker: {error}", file=sys.stderr)
        return 1
    try:
        token = args.token if args.token is not None else os.environ.get("NXE_WORKER_TOKEN")
        return worker.serve(args.listen, token=token, tls_cert=args.tls_cert,
                            tls_key=args.tls_key, max_workers=args.max_workers)
    except ValueError as error:
        print(f"nxe worker: {error}", file=sys.stderr)
        return 2


class _Formatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows an option's default where it has one to show: not for flags, nor for options
    whose absence means something the help text already says."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


class RawDescriptionFormatter(argparse.RawDescriptionHelpFormatter, _Formatter):
    """The same, for a subcommand whose description and epilog are laid out by hand."""


class _Parser(argparse.ArgumentParser):
    """The command's parser and every subcommand's (add_subparsers makes its parsers of the
    parent's class): defaults shown in --help, and a usage error in a subcommand reported with
    that subcommand's usage."""

    def __init__(self, *args: Any, formatter_class: type = _Formatter, **kwargs: Any) -> None:
        super().__init__(*args, formatter_class=formatter_class, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # argparse hands a subcommand's unknown arguments up to the top, which reports them
        # with the top usage; refused here, they are reported where they were given.
        namespace, extras = super().parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras


class _Version(argparse.Action):
    """--version: the version (the package's and the library's, one number: the build takes
    it from nxe.h) and the API version, read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 default: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from . import api_version, version

        print(f"nxe {version()} (API {'.'.join(map(str, api_version()))})")
        parser.exit()


# The subcommands defined in modules of their own, each registering itself with the
# command's subparsers through its add_parser(commands), in the order --help lists them.
_COMMAND_MODULES = ("upscale", "cli_bake", "cli_embed", "cli_transcribe", "bench",
                    "cli_serve")


def build_parser() -> argparse.ArgumentParser:
    """The command's parser with every subcommand registered."""
    parser = _Parser(prog="nxe", description="nxe inference engine")
    parser.add_argument("--version", action=_Version,
                        help="print the version and the API version and exit")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    config = commands.add_parser(
        "config", help="show or check the engine's config file; flags to compile and link C "
        "code against nxe",
        description="`nxe config show` prints the effective config (defaults filled in, the "
        "API key masked), `nxe config check` validates it (each error with its line). With "
        "flags instead, it prints what a C program needs to build against this installation.")
    config.add_argument("action", nargs="?", choices=("show", "check"),
                        help="print or validate the config file")
    config.add_argument("--config", help=cli_serve.CONFIG_HELP)
    config.add_argument("--cflags", action="store_true", help="compiler flags (include path)")
    config.add_argument("--libs", action="store_true", help="linker flags, rpath included")
    config.add_argument("--pkgconfig-path", action="store_true",
                        help="the folder holding nxe.pc, for PKG_CONFIG_PATH")
    config.add_argument("--prefix", action="store_true", help="where the package is installed")
    config.set_defaults(handler=_config)

    ops = commands.add_parser("ops", help="list the registered op types")
    ops.add_argument("--markdown", action="store_true", help="print the full op reference")
    ops.set_defaults(handler=_ops)

    example = commands.add_parser("example", help="run the README's Python example")
    example.set_defaults(handler=_example)

    info = commands.add_parser(
        "info", help="library and API version, the CPU features nxe can use, and the ISA level "
        "its kernels run at, with the reason (NXE_ISA caps it)")
    info.add_argument("--json", action="store_true", help="print one JSON object instead")
    info.set_defaults(handler=_info)

    worker = commands.add_parser(
        "worker", help="serve compiled binaries to remote clients over gRPC (nxe.RemoteDevice)",
        description="Runs compiled binaries for nxe.RemoteDevice clients (the NxeWorker gRPC "
        "service, python/nxe/remote/nxe_remote.proto). A non-loopback address needs --token or "
        "--tls-cert/--tls-key. Needs the `remote` extra (grpcio).")
    worker.add_argument("--listen", default="127.0.0.1:7543",
                        help="HOST:PORT to listen on (PORT 0 picks a free port, printed)")
    worker.add_argument("--token", help="shared token every call must carry (default: "
                        "$NXE_WORKER_TOKEN; the environment keeps it out of `ps`)")
    worker.add_argument("--tls-cert", help="PEM certificate chain: serve TLS")
    worker.add_argument("--tls-key", help="PEM private key of --tls-cert")
    worker.add_argument("--max-workers", type=int, default=4, help="calls served at once")
    worker.set_defaults(handler=_worker)

    cli_models.add_parsers(commands)
    for name in _COMMAND_MODULES:
        importlib.import_module(f".{name}", __package__).add_parser(commands)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except BrokenPipeError:
        # The reader went away (`nxe models | head`): stop quietly, as other tools do, and keep
        # Python from reporting the failed flush of stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        # Ctrl-C ends a command with a line and the shell's status for SIGINT, not a traceback;
        # a command that has something to undo does so on its way out.
        print(f"nxe {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
