// The linking index: normalised name keys of entities.
CREATE INDEX tog_name_key IF NOT EXISTS FOR (n:TogName) ON (n.key)
