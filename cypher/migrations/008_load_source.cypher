// Load checkpoints, one per source file.
CREATE CONSTRAINT tog_load_source IF NOT EXISTS FOR (l:TogLoad) REQUIRE l.source IS UNIQUE
