"""Package data of the engine: the embedded mlperf.conf."""
