package topicbased

const childEnv = "RLMM_TOPICBASED_CRASH_CHILD"

func runCrashChild() int { return 2 }
