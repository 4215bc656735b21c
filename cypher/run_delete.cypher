// Remove one run: its path nodes, its simulated lookahead and its header, nothing else.
CALL () { MATCH (p:TogPath {run: $id}) DETACH DELETE p }
CALL () { MATCH (s:TogSimulated {run: $id}) DETACH DELETE s }
CALL () { MATCH (r:TogRun {id: $id}) DETACH DELETE r }
