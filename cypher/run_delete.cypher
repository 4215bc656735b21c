// Remove one run: its path nodes and its header, nothing else.
CALL () { MATCH (p:TogPath {run: $id}) DETACH DELETE p }
CALL () { MATCH (r:TogRun {id: $id}) DETACH DELETE r }
