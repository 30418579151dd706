"""Compatibility: the official ``mlperf_loadgen`` API over the native engine, and the official engine under infermeter."""
