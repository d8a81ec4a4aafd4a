package image

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/nap-k8s/nap/internal/cli"
	"github.com/nap-k8s/nap/internal/fsutil"
	"github.com/nap-k8s/nap/napimage"
)

type flags struct {
	name, output, layout string
}

// NewCommand returns the image command.
func NewCommand(streams cli.IOStreams) *cobra.Command {
	f := &flags{}
	cmd := &cobra.Command{
		Use:   "image [--name REF] (--file FILE | --layout DIR)",
		Short: "Write nap's multi-architecture image (amd64 and arm64, FROM scratch) for image volumes",
		Long: "Write nap's image: an OCI image index with an image per architecture, each holding only\n" +
			"/nap, the sleeper. As an image volume mounted at /nap, the kubelet pulls its node's\n" +
			"architecture and the hook runs /nap/nap, as with the ConfigMap.\n\n" +
			"--file writes an OCI image-layout tarball (\"-\" for stdout), --layout a directory. Push with\n" +
			"  skopeo copy --all oci-archive:nap.tar docker://REGISTRY/nap:TAG\n" +
			"  crane push DIR REGISTRY/nap:TAG\n" +
			"then napctl inject --delivery image --image REGISTRY/nap:TAG.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return run(streams, f) },
	}
	cmd.Flags().StringVar(&f.name, "name", napimage.DefaultName, "the image's name in the layout")
	cmd.Flags().StringVar(&f.output, "file", "", "write an OCI image-layout tarball to FILE (- for stdout)")
	cmd.Flags().StringVar(&f.layout, "layout", "", "write an OCI image-layout directory DIR (it must not exist)")
	return cmd
}

func run(streams cli.IOStreams, f *flags) error {
	switch {
	case (f.output == "") == (f.layout == ""):
		return errors.New("one of --file FILE and --layout DIR")
	case f.layout != "":
		if err := napimage.WriteDir(f.layout, f.name); err != nil {
			return fmt.Errorf("--layout %s: %w", f.layout, err)
		}
		return nil
	}
	var b bytes.Buffer
	if err := napimage.Write(&b, f.name); err != nil {
		return err
	}
	if f.output == "-" {
		_, err := streams.Out.Write(b.Bytes())
		return err
	}
	if fi, err := os.Stat(f.output); err == nil && fi.IsDir() {
		return fmt.Errorf("--file %s is a directory: --file writes a tarball file; for an OCI layout directory use --layout NEWDIR", f.output)
	}
	if err := fsutil.WriteFileAtomic(f.output, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("--file %s: %w", f.output, err)
	}
	return nil
}
