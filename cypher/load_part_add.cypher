// One committed chunk of a load: lines $from to $values.lines.  Chunks commit
// out of order when two are written at once; `checkpoint` joins the parts
// that follow the last checkpoint without a gap.
CREATE (p:TogLoadPart)
SET p = $values, p.source = $source, p.from = $from
