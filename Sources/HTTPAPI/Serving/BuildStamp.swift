// The commit a build was made from. `scripts/release` writes the commit here for its build and
// puts this file back afterwards; every other build says "development".
let buildStampCommit = "development"
