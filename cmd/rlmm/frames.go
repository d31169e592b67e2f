package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/rlmm-go/rlmm/rpc/brokerframe"
)

func newFramesCmd() *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "frames [file]",
		Short: "Print the frames of one side of a broker connection to rlmm serve's framed socket",
		Long: `frames reads the bytes one side of a connection to rlmm serve's framed socket
wrote (a capture of the broker plugin's connection: rpc/brokerframe), from
the file or from standard input, and prints each frame on one line: the
hello or its answer first, then the requests (--from client) or the replies
and readiness pushes (--from server), as protobuf text. A hello's token is
never printed. A frame that does not decode is printed as its size and why;
a stream cut inside a frame ends with exit status 1.`,
		Example: `  rlmm frames --from client client.bin
  rlmm frames --from server < server.bin`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var side brokerframe.Side
			switch from {
			case "client":
				side = brokerframe.Client
			case "server":
				side = brokerframe.Server
			default:
				return usageErrorf("--from is %q; it must be client or server", from)
			}
			in := cmd.InOrStdin()
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return couldNotRun(fmt.Errorf("frames: %w", err))
				}
				defer f.Close()
				in = f
			}
			if err := brokerframe.Dump(cmd.OutOrStdout(), in, side); err != nil {
				return fmt.Errorf("frames: %w", err)
			}
			return nil
		},
	}
	cmd.SetFlagErrorFunc(flagError)
	cmd.Flags().StringVar(&from, "from", "client", "which side wrote the bytes: client or server")
	return cmd
}
