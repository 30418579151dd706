"""MLPerf log files, byte-compatible with LoadGen's: summary, detail, accuracy and trace."""
