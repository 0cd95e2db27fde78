"""Demo agents and the data `devtool demo` shows, made with the real core library and journal.

No model is reachable here, so every demo model is a `ScriptedModel` answering from a function
of the conversation: deterministic, and still able to answer a replay whose earlier calls were
cut away by a rewind. Each agent module has a `main(props)` entrypoint that `devtool run` (and so
the DevTool's Replay button) can run again: `devtool run devtool.demo.research:main`.
"""
