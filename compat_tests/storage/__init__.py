"""The two storage layouts: modes, compaction, log dirs, flushing, restarts."""
