CREATE INDEX tog_simulated_run IF NOT EXISTS FOR (s:TogSimulated) ON (s.run)
