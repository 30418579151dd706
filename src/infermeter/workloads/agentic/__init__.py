"""Agentic traffic: trajectory datasets, their synthesis, benchmarks and inline accuracy.

A trajectory is one recorded agent session: user turns, the assistant's
answers (text, reasoning, tool calls), tool results and the waits between
them, as MLPerf Endpoints' Agentic Inference benchmark replays them.
"""
