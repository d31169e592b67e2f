package filelog

const crashChildEnv = "FILELOG_CRASH_CHILD_DIR"

func runCrashChild(dir string) int { return 0 }
