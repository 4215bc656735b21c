// The entries of the loads listed as running, but for this one.
MATCH (r:TogLoadRun)
WHERE r.token <> $token
RETURN r.token AS token
