// A load's entry goes: at its end, or once another load took its lock (it
// was killed).
MATCH (r:TogLoadRun {token: $token})
DELETE r
