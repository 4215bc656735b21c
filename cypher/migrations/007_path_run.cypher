CREATE INDEX tog_path_run IF NOT EXISTS FOR (p:TogPath) ON (p.run)
