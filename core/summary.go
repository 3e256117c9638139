package core

// SummaryOf is project projectID's line in a listing of projects
// (ProjectLister), made from the counts of its statistics (AddCounts), so
// the listing and Stats agree on every store.
func SummaryOf(projectID string, counts ProjectStats) ProjectSummary {
	counts.initCounts()
	return ProjectSummary{ProjectID: projectID, Total: counts.Total, ByStatus: counts.ByStatus, ByLevel: counts.ByLevel}
}
