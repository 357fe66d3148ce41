# Golden: the bash and zsh completion `ksight help --completion` writes, driven in real shells: commands, every option of every -h, --by words, --call-graph modes, collector names for run and serve.
. tests/lib.sh

if ! [ -x "$KSIGHT" ]; then
	t_fail "completion" "no $KSIGHT; run make"
	exit 1
fi
"$KSIGHT" help --completion bash >"$T_TMP/ksight.bash" || t_fail "completion bash: generated" "exit $?"
"$KSIGHT" help --commands >"$T_TMP/cmds"
cols=$("$KSIGHT" -h | awk '/^Collectors:$/ { sec = 1; next } /^$/ { sec = 0 } sec && /^  [a-z]/ { print $1 }' | sort | tr '\n' ' ')

# b_comp WORD...: what bash's completion function offers for the command line WORD... (the last
# one being completed), sorted, space-separated
b_comp() {
	bash --norc --noprofile -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _ksight
		printf "%s\n" "${COMPREPLY[@]}"' _ "$T_TMP/ksight.bash" "$@" | sort | tr '\n' ' ' | sed 's/ $//'
}

# z_comp WORD...: the same with zsh's function, compadd and compset standing in for the widget's
if command -v zsh >/dev/null; then
	"$KSIGHT" help --completion zsh >"$T_TMP/_ksight" || t_fail "completion zsh: generated" "exit $?"
	z_comp() {
		zsh -f -c 'source "$1"; shift; words=("$@"); CURRENT=$#; PREFIX=${words[CURRENT]}
			compadd() { while [[ $1 == -* && $1 != -- ]]; do shift; done; shift
				local w; for w; do [[ $w == ${PREFIX}* ]] && print -r -- $IPREFIX$w; done; }
			compset() { [[ $1 == -P && $PREFIX == *,* ]] && { IPREFIX=${PREFIX%,*},; PREFIX=${PREFIX##*,}; }; }
			_files() { print -r -- "<files>"; }
			_ksight' _ "$T_TMP/_ksight" "$@" | sort | tr '\n' ' ' | sed 's/ $//'
	}
else
	t_skip "completion zsh" "no zsh: run scripts/setup.sh"
fi

# c_eq NAME EXPECTED WORD...: both shells offer EXPECTED for WORD...
c_eq() {
	_n=$1 _e=$2
	shift 2
	t_eq "completion bash: $_n" "$_e" "$(b_comp "$@")"
	command -v zsh >/dev/null && t_eq "completion zsh: $_n" "$_e" "$(IPREFIX= z_comp "$@")"
}

t_eq "completion bash: 'complete -p' names the function" "complete -F _ksight ksight" \
	"$(bash --norc --noprofile -c '. "$1"; complete -p ksight' _ "$T_TMP/ksight.bash")"
if command -v zsh >/dev/null; then
	mkdir -p "$T_TMP/fpath" && cp "$T_TMP/_ksight" "$T_TMP/fpath/"
	t_eq "completion zsh: compinit registers _ksight from fpath" "_ksight" \
		"$(zsh -f -c 'fpath=("$1" $fpath); autoload -Uz compinit; compinit -u -D; print -r -- ${_comps[ksight]}' _ "$T_TMP/fpath")"
fi

c_eq "a command by its start" "syscalls" ksight sysc
c_eq "every command" "$( (cat "$T_TMP/cmds"; printf '%s\n' help -h --help -V --version) | sort | tr '\n' ' ' | sed 's/ $//')" ksight ""
c_eq "help COMMAND" "runqlat" ksight help runq
c_eq "--by words of syscalls' -h" "$("$KSIGHT" syscalls -h | sed -n 's/^ *KEY: //p' | tr '|' '\n' | sort | tr '\n' ' ' | sed 's/ $//')" \
	ksight syscalls --by ""
c_eq "--call-graph modes" "cfi dwarf fp" ksight profile --call-graph ""
c_eq "--call-graph modes of a --stacks mode" "cfi fp" ksight offcpu --stacks --call-graph ""
c_eq "-e events" "cache-misses cpu-clock cycles" ksight profile -e c
c_eq "run: collector names" "$(echo $cols)" ksight run ""
c_eq "run: the last of a comma list" "syscalls,runqlat" ksight run syscalls,runq
c_eq "serve --collectors" "syscalls,tcp" ksight serve --collectors syscalls,tc
c_eq "an option by its start" "--no-latency" ksight syscalls --no-l
c_eq "a number: nothing offered" "" ksight syscalls -p ""
t_eq "completion bash: a file argument: files" "$T_TMP/ksight.bash" "$(b_comp ksight record -o "$T_TMP/ksight.ba")"
command -v zsh >/dev/null && t_eq "completion zsh: a file argument: files" "<files>" "$(z_comp ksight record -o "$T_TMP/ksight.ba")"
c_eq "after -- CMD: nothing (the command's own)" "" ksight syscalls -- ls --al

# every option of every command's -h (and of its --stacks mode) is offered after a "-"
for c in $(cat "$T_TMP/cmds"); do
	"$KSIGHT" "$c" -h >"$T_TMP/help"
	want=$(sed -n 's/^  -\([^-]\), \(--[^ ]*\).*/-\1\n\2/p; s/^      \(--[^ ]*\).*/\1/p' "$T_TMP/help" | sort | tr '\n' ' ' | sed 's/ $//')
	c_eq "$c: the options of its -h" "$want" ksight "$c" -
	if grep -q '^      --stacks ' "$T_TMP/help"; then
		"$KSIGHT" "$c" --stacks -h >"$T_TMP/help"
		want=$(sed -n 's/^  -\([^-]\), \(--[^ ]*\).*/-\1\n\2/p; s/^      \(--[^ ]*\).*/\1/p' "$T_TMP/help" | sort | tr '\n' ' ' | sed 's/ $//')
		c_eq "$c --stacks: the options of its -h" "$want" ksight "$c" --stacks -
	fi
done
exit $T_FAILED
