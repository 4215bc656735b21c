MATCH (r:TogRun) RETURN r {.*} AS run ORDER BY r.started
