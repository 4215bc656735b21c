// Committed chunks of an unfinished load, found by their source file.
CREATE INDEX tog_load_part_source IF NOT EXISTS FOR (p:TogLoadPart) ON (p.source)
