// The linking index by entity too: a load or a correction that merges a name
// entry finds it among the few names of its entity, not among every entity of
// a name thousands share. (By the key alone, 2,000 more entries of a name
// 200,000 entities share took a load 178 s; with this index 20,000 took 3 s.
// An index on key and entity together did as well but made a fresh load of
// those 200,000 names 3x slower; this one costs a load nothing measurable.)
CREATE INDEX tog_name_entity IF NOT EXISTS FOR (n:TogName) ON (n.entity)
