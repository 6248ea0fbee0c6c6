"""`hedwig completion bash|zsh`: a shell completion script made from the command's own
parser, so it knows every subcommand and option as installed (no dependency, nothing to
keep in step). `eval "$(hedwig completion bash)"` in ~/.bashrc; zsh loads it through
bashcompinit."""

import argparse

_BASH = """# hedwig shell completion (bash; zsh through bashcompinit): eval "$(hedwig completion bash)"
_hedwig_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}" command="" word
    for word in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
        case "$word" in -*) ;; *) command="$word"; break ;; esac
    done
    case "$command" in
%(cases)s
        *) COMPREPLY=($(compgen -W "%(commands)s %(global)s" -- "$cur")) ;;
    esac
}
complete -o default -F _hedwig_complete hedwig
"""

_ZSH_HEAD = "autoload -U +X bashcompinit && bashcompinit\n"


def _options(parser) -> list[str]:
    return sorted(option for action in parser._actions for option in action.option_strings)


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    """The completion script of `parser` (the whole `hedwig` parser) for `shell`."""
    subcommands = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            subcommands = dict(action.choices)
    cases = "\n".join(
        f'        {name}) COMPREPLY=($(compgen -W "{" ".join(_options(sub))}" -- "$cur")) ;;'
        for name, sub in sorted(subcommands.items())
    )
    text = _BASH % {
        "cases": cases,
        "commands": " ".join(sorted(subcommands)),
        "global": " ".join(_options(parser)),
    }
    return (_ZSH_HEAD + text) if shell == "zsh" else text


def add_completion(subparsers, client_options):
    parser = subparsers.add_parser(
        "completion",
        help='print a shell completion script: eval "$(hedwig completion bash)"',
        description="print a completion script for bash or zsh; add "
        "'eval \"$(hedwig completion bash)\"' to ~/.bashrc (zsh: ~/.zshrc with 'zsh')",
    )
    parser.add_argument("shell", choices=["bash", "zsh"])
    parser.set_defaults(run=completion)
    return parser


def completion(args) -> int:
    """print a completion script for the whole command (`args.parser`, set by hedwig.commands.main)"""
    print(script(args.parser, args.shell), end="")
    return 0
