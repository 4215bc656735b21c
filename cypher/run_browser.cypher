// Draws one run in Neo4j Browser: set the parameter first with
//   :param run => "RUN-ID"
// then run this query.  Style it with cypher/tog-browser.grass (:style).
// Only the run's own nodes and edges are returned (not the KG entities the
// path nodes are at), so Browser connects nothing of the KG into the tree.
// A planned run's simulated lookahead (TogSimulated) hangs off the path
// nodes it was foreseen from.
MATCH (r:TogRun {id: $run})-[root:ROOT]->(top:TogPath)
MATCH tree = (top)<-[:PARENT*0..]-(p:TogPath)
OPTIONAL MATCH foreseen = (p)<-[:LOOKAHEAD]-(:TogSimulated)
RETURN r, root, tree, foreseen
